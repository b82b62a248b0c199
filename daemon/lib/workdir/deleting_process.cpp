#include "workdir/deleting_process.h"

#include "base/file_io.h"

namespace infervisor {

namespace {

std::optional<std::string> unified_cgroup(const std::string& text) {
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        if (text.compare(start, 3, "0::") == 0) return text.substr(start + 3, end - start - 3);
        start = end + 1;
    }
    return std::nullopt;
}

}  // namespace

DeletingProcess look_up_process(const std::filesystem::path& procfs, pid_t pid) {
    DeletingProcess p;
    p.pid = pid;
    if (pid <= 0) return p;
    auto dir = procfs / std::to_string(pid);
    auto cgroup = read_file(dir / "cgroup");
    if (!cgroup) return p;
    auto path = unified_cgroup(*cgroup);
    if (!path) return p;
    p.cgroup = *path;
    p.alive = true;
    if (auto comm = read_file(dir / "comm")) p.comm = std::string(trim(*comm));
    return p;
}

bool cgroup_contains(const std::string& cgroup, const std::string& process_cgroup) {
    if (cgroup.empty()) return false;
    if (process_cgroup == cgroup) return true;
    std::string prefix = cgroup.back() == '/' ? cgroup : cgroup + "/";
    return process_cgroup.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace infervisor
