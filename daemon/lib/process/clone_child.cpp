#include "process/clone_child.h"

#include <linux/sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

#include "process/pidfd.h"

namespace infervisor {

namespace {

std::atomic<bool> kernel_lacks_clone_into_cgroup{false};
std::atomic<bool> kernel_lacks_clone3{false};

// glibc 2.36 has no clone3 wrapper. Without CLONE_VM and with no stack given,
// the child continues on its copy of the caller's stack, exactly like fork().
pid_t raw_clone3(uint64_t flags, int* pidfd, int cgroup_fd) {
    clone_args args = {};
    args.flags = flags;
    args.pidfd = reinterpret_cast<uintptr_t>(pidfd);
    args.exit_signal = SIGCHLD;
    if (flags & CLONE_INTO_CGROUP) args.cgroup = static_cast<uint64_t>(cgroup_fd);
    return static_cast<pid_t>(::syscall(SYS_clone3, &args, sizeof args));
}

bool means_unsupported_kernel(int error) {
    return error == ENOSYS || error == E2BIG || error == EINVAL;
}

bool means_unplaceable_fd(int error) { return error == EBADF || error == EOPNOTSUPP; }

Result<ClonedChild> fork_then_pidfd_open() {
    pid_t pid = ::fork();
    if (pid < 0) return errno_error("fork");
    if (pid == 0) return ClonedChild{0, -1, false};
    auto pidfd = open_pidfd(pid);
    if (!pidfd) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        return pidfd.error();
    }
    return ClonedChild{pid, pidfd->release(), false};
}

}  // namespace

Result<ClonedChild> clone_child(int cgroup_fd, bool try_into_cgroup) {
    int pidfd = -1;
    if (cgroup_fd >= 0 && try_into_cgroup && !kernel_lacks_clone_into_cgroup) {
        pid_t pid = raw_clone3(CLONE_PIDFD | CLONE_INTO_CGROUP, &pidfd, cgroup_fd);
        if (pid >= 0) return ClonedChild{pid, pidfd, true};
        if (means_unsupported_kernel(errno)) {
            kernel_lacks_clone_into_cgroup = true;
        } else if (!means_unplaceable_fd(errno)) {
            return errno_error("clone3 into cgroup");
        }
    }
    if (!kernel_lacks_clone3) {
        pid_t pid = raw_clone3(CLONE_PIDFD, &pidfd, -1);
        if (pid >= 0) return ClonedChild{pid, pidfd, false};
        if (errno != ENOSYS) return errno_error("clone3");
        kernel_lacks_clone3 = true;
    }
    return fork_then_pidfd_open();
}

}  // namespace infervisor
