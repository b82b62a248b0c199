#include "cgroup/cgroup_limits.h"

#include <filesystem>

#include "base/file_io.h"

namespace infervisor {

namespace {

std::string limit_text(ByteLimit v) { return v ? std::to_string(*v) : "max"; }

}  // namespace

Result<std::vector<std::string>> apply_limits(const CgroupDir& dir, const CgroupLimits& limits) {
    std::vector<std::pair<std::string, std::string>> writes = {
        {"memory.max", limit_text(limits.memory_max)},
        {"memory.high", limit_text(limits.memory_high)},
        {"memory.swap.max", limit_text(limits.swap_max)},
        {"memory.oom.group", "1"},
        {"pids.max", limits.pids_max ? std::to_string(*limits.pids_max) : "max"},
    };
    if (limits.cpu_weight) writes.emplace_back("cpu.weight", std::to_string(*limits.cpu_weight));
    std::vector<std::string> warnings;
    for (const auto& [file, value] : writes) {
        std::error_code ec;
        if (!std::filesystem::exists(dir.path() / file, ec)) {
            // memory.max is the point of the whole exercise: never optional.
            if (file == "memory.max" || file == "memory.oom.group")
                return plain_error(dir.path().string() + " has no " + file +
                                   ": the memory controller is not enabled for it");
            warnings.push_back(file + " is not available in " + dir.path().string() + "; '" +
                               value + "' not applied");
            continue;
        }
        auto r = dir.write(file, value);
        if (!r) return r.error();
    }
    return warnings;
}

namespace {

const char* file_of(MemoryLimit which) {
    return which == MemoryLimit::high ? "memory.high" : "memory.swap.max";
}

}  // namespace

Result<std::string> read_memory_limit(const CgroupDir& dir, MemoryLimit which) {
    auto text = dir.read(file_of(which));
    if (!text) return text.error();
    return std::string(trim(*text));
}

Result<void> write_memory_limit(const CgroupDir& dir, MemoryLimit which, const std::string& value) {
    return dir.write(file_of(which), value);
}

Result<void> write_memory_limit(const CgroupDir& dir, MemoryLimit which, uint64_t bytes) {
    return dir.write(file_of(which), std::to_string(bytes));
}

}  // namespace infervisor
