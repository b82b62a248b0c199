#include "cgroup/memory_reclaim.h"

#include <cerrno>
#include <chrono>
#include <filesystem>

#include "base/file_io.h"
#include "base/units.h"
#include "cgroup/cgroup_stats.h"

namespace infervisor {

namespace {

using SteadyTime = std::chrono::steady_clock;

std::optional<uint64_t> memory_current(const CgroupDir& dir) {
    return value_or_empty(CgroupStats(dir).memory_current());
}

bool has_file(const CgroupDir& dir, const char* file) {
    std::error_code ec;
    return std::filesystem::exists(dir.path() / file, ec);
}

// One step: ask for `bytes` less. false: stop (nothing more to gain, or an error).
bool step_reclaim(const CgroupDir& dir, uint64_t bytes, ReclaimResult& out) {
    auto r = dir.write("memory.reclaim", std::to_string(bytes));
    ++out.steps;
    if (r) return true;
    if (r.error().code == EAGAIN) {  // less than asked could be reclaimed: the end
        out.complete = true;
        return false;
    }
    out.error = r.error().message();
    return false;
}

bool step_high(const CgroupDir& dir, uint64_t current, uint64_t bytes, ReclaimResult& out) {
    uint64_t target = current > bytes ? current - bytes : 0;
    auto r = dir.write("memory.high", std::to_string(target));
    ++out.steps;
    if (!r) {
        out.error = r.error().message();
        return false;
    }
    return true;
}

}  // namespace

std::string_view to_string(ReclaimMethod method) {
    switch (method) {
        case ReclaimMethod::memory_reclaim:
            return "memory.reclaim";
        case ReclaimMethod::memory_high:
            return "memory.high";
        case ReclaimMethod::none:
            return "none";
    }
    return "?";
}

uint64_t ReclaimResult::bytes_reclaimed() const {
    if (!memory_before || !memory_after || *memory_after > *memory_before) return 0;
    return *memory_before - *memory_after;
}

ReclaimResult reclaim_memory(const CgroupDir& dir, Duration deadline, uint64_t step) {
    ReclaimResult out;
    const auto begin = SteadyTime::now();
    const auto end = begin + deadline;
    out.memory_before = memory_current(dir);
    if (has_file(dir, "memory.reclaim")) {
        out.method = ReclaimMethod::memory_reclaim;
    } else if (auto high = dir.read("memory.high")) {
        out.method = ReclaimMethod::memory_high;
        out.memory_high_before = std::string(trim(*high));
    } else {
        out.error = "neither memory.reclaim nor memory.high in " + dir.path().string() +
                    " (no memory controller)";
        return out;
    }
    std::optional<uint64_t> current = out.memory_before;
    uint64_t last = current.value_or(UINT64_MAX);
    while (current && *current > 0) {
        if (SteadyTime::now() >= end) {
            out.error = "stopped at the deadline of " + format_duration(deadline);
            break;
        }
        uint64_t bytes = std::min(step, *current);
        bool go_on = out.method == ReclaimMethod::memory_reclaim
                         ? step_reclaim(dir, bytes, out)
                         : step_high(dir, *current, bytes, out);
        current = memory_current(dir);
        if (!go_on) break;
        // A step that freed nothing: the rest cannot go (no swap, locked pages).
        if (current && *current >= last) {
            out.complete = true;
            break;
        }
        last = current.value_or(0);
    }
    if (current && *current == 0) out.complete = true;
    out.memory_after = current;
    out.seconds = std::chrono::duration<double>(SteadyTime::now() - begin).count();
    return out;
}

}  // namespace infervisor
