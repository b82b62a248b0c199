// clone_child: fork-style clone that returns a pidfd and, where the kernel
// allows, creates the child directly inside a target cgroup.
#pragma once

#include <sys/types.h>

#include "base/result.h"

namespace infervisor {

struct ClonedChild {
    pid_t pid = -1;  // 0 in the child
    int pidfd = -1;  // in the parent: O_CLOEXEC pidfd of the child, owned by the caller
    // true: clone3(CLONE_INTO_CGROUP) put the child into the cgroup. false with
    // a cgroup fd: the child must move itself there before anything else.
    bool in_cgroup = false;
};

// Returns twice, like fork(): in the child with pid 0, in the parent with the
// child's pid and pidfd. The child has its own copy of the address space and
// signals SIGCHLD when it exits.
//
// Tries, in order:
//  1. clone3(CLONE_PIDFD | CLONE_INTO_CGROUP), when cgroup_fd >= 0 and
//     try_into_cgroup. Kernels before 5.7 (ENOSYS, E2BIG, EINVAL) and fds
//     the kernel will not place into (EBADF: not a cgroup2 directory, e.g.
//     cgroup v1; EOPNOTSUPP: a threaded or domain-invalid cgroup) fall
//     through; other errors (EBUSY, EACCES, EAGAIN, ...) are returned.
//  2. clone3(CLONE_PIDFD) (kernel 5.3+).
//  3. fork() + pidfd_open() for kernels without clone3.
// A kernel that lacks clone3 or CLONE_INTO_CGROUP is remembered, so later
// calls go straight to what works.
Result<ClonedChild> clone_child(int cgroup_fd, bool try_into_cgroup);

}  // namespace infervisor
