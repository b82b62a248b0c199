// Whether the cgroup the daemon would manage was delegated to it.
//
// The daemon creates `workers/NAME` (and `supervisor/` or `anchor/`) below
// the cgroup it manages (cgroup_tree.h) and moves processes between them;
// that is only safe where systemd has handed the subtree over (Delegate=yes).
// Since v251 systemd marks each delegated cgroup with the extended attribute
// trusted.delegate=1 (user.delegate=1 under a user manager). Older systemd
// (Ubuntu 22.04 has 249) sets no mark, and a container's cgroup namespace
// root has none either, so a missing mark is reported as a warning by the
// caller, never a refusal.
#pragma once

#include <filesystem>

namespace infervisor {

enum class DelegationMark {
    present,  // trusted.delegate or user.delegate is "1"
    absent,   // the file system supports the attributes, neither is set
    unknown,  // extended attributes could not be read here
};

DelegationMark delegation_mark(const std::filesystem::path& cgroup);

}  // namespace infervisor
