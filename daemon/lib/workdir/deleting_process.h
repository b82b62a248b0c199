// Who a deleting process is, as far as /proc still knows it.
//
// Contract: everything comes from the kernel's own files under
// <procfs>/PID (comm, cgroup), never from a path a worker could have written.
// A process that has exited by the time it is looked up has neither: then
// `alive` is false and the caller cannot tell whose it was.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>

namespace infervisor {

struct DeletingProcess {
    pid_t pid = 0;
    bool alive = false;
    std::string comm;    // /proc/PID/comm, e.g. "systemd-tmpfile"
    std::string cgroup;  // the cgroup2 path of /proc/PID/cgroup ("0::" line), e.g.
                         // "/system.slice/x.service"
};

DeletingProcess look_up_process(const std::filesystem::path& procfs, pid_t pid);

// True when cgroup2 path `process_cgroup` is `cgroup` or below it
// ("/a/b" is in "/a", "/ab" is not).
bool cgroup_contains(const std::string& cgroup, const std::string& process_cgroup);

}  // namespace infervisor
