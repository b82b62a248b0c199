#include "process/child_setup.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <initializer_list>

namespace infervisor {

namespace {

[[noreturn]] void fail(const ChildPlan& plan, ChildStep step) noexcept {
    ChildFailure failure{step, errno};
    // One small write to a pipe is atomic; if even this fails there is no one
    // left to tell, and the parent sees EOF followed by exit code 127.
    ssize_t ignored = ::write(plan.error_pipe, &failure, sizeof failure);
    (void)ignored;
    ::_exit(127);
}

void join_cgroup(const ChildPlan& plan) noexcept {
    int fd = ::openat(plan.cgroup_fd, "cgroup.procs", O_WRONLY | O_CLOEXEC);
    if (fd < 0) fail(plan, ChildStep::open_cgroup_procs);
    // "0" names the writing process itself, in cgroup v2 and v1 alike.
    if (::write(fd, "0", 1) != 1) fail(plan, ChildStep::write_cgroup_procs);
    ::close(fd);
}

// Handlers and ignored signals survive clone and (ignored ones) execve; a
// worker must start with the defaults. EINVAL for SIGKILL, SIGSTOP and
// glibc's internal signals is expected and harmless.
void reset_signals(const ChildPlan& plan) noexcept {
    struct sigaction dfl = {};
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
    sigset_t none;
    ::sigemptyset(&none);
    if (::sigprocmask(SIG_SETMASK, &none, nullptr) < 0) fail(plan, ChildStep::reset_signal_mask);
}

void install_stdio(const ChildPlan& plan) noexcept {
    constexpr ChildStep steps[3] = {ChildStep::dup2_stdin, ChildStep::dup2_stdout,
                                    ChildStep::dup2_stderr};
    for (int target = 0; target < 3; ++target) {
        // Sources are >= 3, so dup2 always creates a new, inheritable fd.
        if (::dup2(plan.stdio[target], target) < 0) fail(plan, steps[target]);
    }
}

// Raw system calls: they change only this thread's credentials, which in a
// single-threaded child are the process's. Order matters: groups and gid
// while still privileged, uid last.
void change_credentials(const ChildPlan& plan) noexcept {
    if (::syscall(SYS_setgroups, plan.group_count, plan.groups) < 0)
        fail(plan, ChildStep::setgroups);
    if (::syscall(SYS_setresgid, plan.gid, plan.gid, plan.gid) < 0)
        fail(plan, ChildStep::setresgid);
    if (::syscall(SYS_setresuid, plan.uid, plan.uid, plan.uid) < 0)
        fail(plan, ChildStep::setresuid);

    uid_t ruid, euid, suid;
    gid_t rgid, egid, sgid;
    if (::getresuid(&ruid, &euid, &suid) < 0 || ::getresgid(&rgid, &egid, &sgid) < 0)
        fail(plan, ChildStep::verify_credentials);
    bool uid_ok = plan.uid == static_cast<uid_t>(-1) ||
                  (ruid == plan.uid && euid == plan.uid && suid == plan.uid);
    bool gid_ok = plan.gid == static_cast<gid_t>(-1) ||
                  (rgid == plan.gid && egid == plan.gid && sgid == plan.gid);
    if (!uid_ok || !gid_ok) {
        errno = EPERM;
        fail(plan, ChildStep::verify_credentials);
    }
}

// Marks every fd >= 3 close-on-exec (the error pipe must stay open until
// execve). Kernels 5.9/5.10 lack CLOSE_RANGE_CLOEXEC (EINVAL): close all but
// the pipe; kernels before 5.9 lack close_range (ENOSYS): close one by one.
void close_other_fds(const ChildPlan& plan) noexcept {
    if (::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == 0) return;
    if (errno == EINVAL) {
        unsigned pipe_fd = static_cast<unsigned>(plan.error_pipe);
        if (pipe_fd > 3 && ::close_range(3, pipe_fd - 1, 0) < 0) fail(plan, ChildStep::close_fds);
        if (::close_range(pipe_fd + 1, ~0U, 0) < 0) fail(plan, ChildStep::close_fds);
        return;
    }
    if (errno != ENOSYS) fail(plan, ChildStep::close_fds);
    for (int fd = 3; fd < plan.max_fd; ++fd) {
        if (fd != plan.error_pipe) ::close(fd);
    }
}

void set_oom_score_adj(const ChildPlan& plan) noexcept {
    if (!plan.oom_score_adj) return;
    int fd = ::open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (fd < 0) fail(plan, ChildStep::oom_score_adj);
    size_t len = 0;
    while (plan.oom_score_adj[len]) ++len;
    if (::write(fd, plan.oom_score_adj, len) != static_cast<ssize_t>(len))
        fail(plan, ChildStep::oom_score_adj);
    ::close(fd);
}

// The daemon keeps CAP_SYS_ADMIN (fanotify naming who deleted a protected
// file), CAP_SYS_PTRACE (reading its workers' /proc), with the criu drop-in
// CAP_NET_ADMIN, CAP_SYS_CHROOT and CAP_SYS_TIME (for criu), and CAP_SETPCAP
// (to drop them here) in its bounding set; a worker, even one running as root, gets
// none of them (with CAP_SYS_PTRACE a root worker could ptrace the daemon and
// act with its CAP_SYS_ADMIN). CAP_SETPCAP goes last: dropping needs it.
// An unprivileged caller (tests) holds no capabilities to hand on: its EPERM
// is not an error.
void drop_supervisor_capabilities(const ChildPlan& plan) noexcept {
    for (int cap : {CAP_SYS_ADMIN, CAP_SYS_PTRACE, CAP_NET_ADMIN, CAP_SYS_CHROOT, CAP_SYS_TIME,
                    CAP_SETPCAP}) {
        if (::prctl(PR_CAPBSET_READ, cap, 0, 0, 0) != 1) continue;
        if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0) continue;
        if (errno == EPERM && ::geteuid() != 0) return;
        fail(plan, ChildStep::drop_capabilities);
    }
}

// PrivateTmp: a mount namespace of the child's own, in which the prepared
// detached clones of the private tmp dir are attached over /tmp and
// /var/tmp. Mounts are made slaves first, so that nothing done here
// propagates to the host. A host without /var/tmp gets /tmp only.
void set_up_private_tmp(const ChildPlan& plan) noexcept {
    if (::unshare(CLONE_NEWNS) < 0) fail(plan, ChildStep::private_tmp);
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) < 0)
        fail(plan, ChildStep::private_tmp);
    if (::syscall(SYS_move_mount, plan.private_tmp_tree, "", AT_FDCWD, "/tmp",
                  MOVE_MOUNT_F_EMPTY_PATH) < 0)
        fail(plan, ChildStep::private_tmp);
    if (::syscall(SYS_move_mount, plan.private_var_tmp_tree, "", AT_FDCWD, "/var/tmp",
                  MOVE_MOUNT_F_EMPTY_PATH) < 0 &&
        errno != ENOENT)
        fail(plan, ChildStep::private_tmp);
}

// prlimit64 as a raw system call, as the credentials are changed: nothing
// glibc might lock or allocate for.
void set_rlimits(const ChildPlan& plan) noexcept {
    struct {
        unsigned long long cur, max;
    } limit;
    if (plan.address_space_limit != 0) {
        limit.cur = limit.max = plan.address_space_limit;
        if (::syscall(SYS_prlimit64, 0, RLIMIT_AS, &limit, nullptr) < 0)
            fail(plan, ChildStep::set_rlimits);
    }
    if (plan.no_core_dump) {
        limit.cur = limit.max = 0;
        if (::syscall(SYS_prlimit64, 0, RLIMIT_CORE, &limit, nullptr) < 0)
            fail(plan, ChildStep::set_rlimits);
    }
    if (plan.fd_limit_soft != 0) {
        limit.cur = plan.fd_limit_soft;
        limit.max = plan.fd_limit_hard;
        if (::syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &limit, nullptr) < 0)
            fail(plan, ChildStep::set_rlimits);
    }
}

}  // namespace

void run_child(const ChildPlan& plan, bool join) noexcept {
    if (join) join_cgroup(plan);
    reset_signals(plan);
    if (::setsid() < 0) fail(plan, ChildStep::setsid);
    // The daemon's own umask is 0077 (its unit); a worker starts with the
    // usual 0022, as a systemd service would.
    ::umask(0022);
    set_oom_score_adj(plan);
    // The daemon runs without transparent huge pages (app/memory_lock.h), a
    // setting fork and execve pass on: a worker gets the host's own.
    (void)::prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0);
    install_stdio(plan);
    if (plan.private_tmp_tree >= 0) set_up_private_tmp(plan);
    set_rlimits(plan);
    if (!plan.keep_supervisor_capabilities) drop_supervisor_capabilities(plan);
    if (plan.change_credentials) change_credentials(plan);
    if (plan.no_new_privileges && ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        fail(plan, ChildStep::no_new_privileges);
    if (::chdir(plan.working_directory) < 0) fail(plan, ChildStep::chdir);
    close_other_fds(plan);
    ::execve(plan.path, plan.argv, plan.envp);
    fail(plan, ChildStep::execve);
}

}  // namespace infervisor
