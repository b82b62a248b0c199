// Finding this process's own cgroup v2 directory: the cgroup2 mount point from
// /proc/self/mountinfo joined with the "0::" line of /proc/self/cgroup.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "base/result.h"

namespace infervisor {

// Parses mountinfo text; returns the mount point of the first cgroup2 mount.
Result<std::filesystem::path> find_cgroup2_mount(std::string_view mountinfo);

// Parses /proc/PID/cgroup text; returns the cgroup v2 path ("/system.slice/x").
Result<std::string> find_cgroup2_path(std::string_view proc_cgroup);

// Both together, from `procfs` (normally /proc) for process `pid` ("self").
Result<std::filesystem::path> discover_own_cgroup(const std::filesystem::path& procfs,
                                                  const std::string& pid = "self");

}  // namespace infervisor
