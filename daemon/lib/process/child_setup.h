// The child's side of spawn_process: the steps between clone and execve.
//
// Contract: run_child() runs in a freshly cloned child of a possibly
// multi-threaded parent, so it only makes async-signal-safe calls: no
// allocation, no locks, credentials changed with raw system calls (glibc's
// setresuid would try to coordinate with threads that exist only in the
// parent). Everything it needs is prepared by the parent in a ChildPlan before
// cloning. A failing step is reported as a ChildFailure on the error pipe and
// the child _exit(127)s; a successful execve closes the pipe (it is O_CLOEXEC),
// which the parent reads as EOF.
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace infervisor {

enum class ChildStep : int {
    open_cgroup_procs,
    write_cgroup_procs,
    reset_signal_mask,
    setsid,
    oom_score_adj,
    dup2_stdin,
    dup2_stdout,
    dup2_stderr,
    setgroups,
    setresgid,
    setresuid,
    verify_credentials,
    drop_capabilities,
    no_new_privileges,
    chdir,
    close_fds,
    execve,
    private_tmp,
    set_rlimits,
};

// What the child writes to the error pipe when a step fails.
struct ChildFailure {
    ChildStep step;
    int error;  // errno of the failed call
};

// Raw, pre-built inputs of run_child. Pointers refer to memory owned by the
// parent's SpawnRequest and stay valid in the child's copy of the address space.
struct ChildPlan {
    const char* path = nullptr;   // argv[0]
    char* const* argv = nullptr;  // NULL-terminated
    char* const* envp = nullptr;  // NULL-terminated
    const char* working_directory = "/";
    int stdio[3] = {-1, -1, -1};  // fds >= 3, O_CLOEXEC: dup2'ed onto 0, 1, 2
    int error_pipe = -1;          // write end, O_CLOEXEC
    int cgroup_fd = -1;           // used only when join_cgroup is true
    bool change_credentials = false;
    uid_t uid = static_cast<uid_t>(-1);  // -1: keep (setresuid is then a no-op)
    gid_t gid = static_cast<gid_t>(-1);
    const gid_t* groups = nullptr;
    size_t group_count = 0;
    bool no_new_privileges = true;
    bool keep_supervisor_capabilities = false;  // see SpawnRequest
    const char* oom_score_adj = nullptr;        // decimal text, or nullptr to inherit
    int max_fd = 1024;                          // close loop bound when close_range is unavailable
    // Detached clones (open_tree OPEN_TREE_CLONE) of the private tmp dir, to
    // be attached over /tmp and /var/tmp in the child's own mount namespace;
    // -1: none. A bind from a path would resolve it again (a worker controls
    // what is inside its work dir), and a bind from an fd of the parent's
    // namespace is refused in the new one; a detached clone is neither.
    int private_tmp_tree = -1;
    int private_var_tmp_tree = -1;
    // RLIMIT_AS in bytes, 0: inherit; RLIMIT_CORE 0 when no_core_dump.
    unsigned long long address_space_limit = 0;
    bool no_core_dump = false;
    // RLIMIT_NOFILE (soft, hard) to set; soft 0: inherit (process/fd_limit.h).
    unsigned long long fd_limit_soft = 0;
    unsigned long long fd_limit_hard = 0;
};

// Never returns. `join_cgroup`: write this process into plan.cgroup_fd's
// cgroup.procs first (the CLONE_INTO_CGROUP fallback); failure is fatal.
[[noreturn]] void run_child(const ChildPlan& plan, bool join_cgroup) noexcept;

}  // namespace infervisor
