// The daemon's descriptor limit (RLIMIT_NOFILE). The daemon holds a few
// descriptors per worker for as long as the worker runs (its statistics files,
// cgroup/stat_file_set.h; memory.events and PSI triggers; pidfds), so with
// many workers the usual soft limit of 1024 is too low. As systemd advises
// for programs that do not use select(2) (systemd.exec(5), LimitNOFILE=), it
// raises its soft limit to the hard one at start and gives every child the
// soft limit it was itself started with: a worker sees the limit it would
// have had without this.
//
// Contract: raise_fd_limit() is called once at start, before any child.
// The original soft limit is carried across the daemon's own re-execution
// in the environment (kInheritedFdLimitVariable), so a re-executed daemon
// does not take its raised limit for the original. Nothing here fails the
// start: without a higher hard limit the soft one stays as it was.
#pragma once

#include <sys/resource.h>

#include <optional>

namespace infervisor {

inline constexpr char kInheritedFdLimitVariable[] = "INFERVISOR_INHERITED_NOFILE";

// Raises the soft limit to the hard one (at most kMaxRaisedFdLimit).
void raise_fd_limit();

// The limit a child gets (soft as the daemon found it, hard as it is), or
// empty when raise_fd_limit() changed nothing: the child inherits.
std::optional<rlimit> fd_limit_for_children();

inline constexpr rlim_t kMaxRaisedFdLimit = 1 << 20;

}  // namespace infervisor
