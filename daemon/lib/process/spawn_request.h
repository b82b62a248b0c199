// SpawnRequest: everything that defines how a worker process starts, and
// SpawnedProcess: what the caller holds afterwards.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/unique_fd.h"

namespace infervisor {

struct SpawnRequest {
    // argv[0] is the absolute path of the program: no PATH search, no shell.
    std::vector<std::string> argv;
    // The complete environment of the new process, each entry "KEY=value".
    // Nothing is inherited from the daemon.
    std::vector<std::string> environment;

    // Credentials. When uid or gid is set, the supplementary groups are
    // replaced by `supplementary_groups` (empty: none), so a worker never keeps
    // root's groups. Unset: the daemon's own credentials are kept.
    std::optional<uid_t> uid;
    std::optional<gid_t> gid;
    std::vector<gid_t> supplementary_groups;

    // chdir target, entered after the credentials change (so the worker's
    // user must be able to enter it). Empty: "/".
    std::filesystem::path working_directory;

    // O_DIRECTORY (O_PATH is enough) fd of the cgroup the process must start in;
    // -1 leaves it in the daemon's cgroup. Borrowed, not closed.
    int cgroup_fd = -1;
    // false forces the fallback placement (the child writes itself into
    // cgroup.procs) even where clone3(CLONE_INTO_CGROUP) works; for tests.
    bool allow_clone_into_cgroup = true;

    // Standard streams of the new process; -1 means /dev/null. Borrowed: the
    // caller keeps (and closes) its own fds.
    int stdin_fd = -1;
    int stdout_fd = -1;
    int stderr_fd = -1;

    // Written to /proc/self/oom_score_adj in the child before the credentials
    // change (-1000..1000). The daemon runs with a low score of its own, which a
    // worker must not inherit: the kernel's host-wide OOM killer should be free
    // to pick a runaway worker. nullopt: inherit.
    std::optional<int> oom_score_adj;

    // PR_SET_NO_NEW_PRIVS: setuid binaries and file capabilities grant nothing.
    bool no_new_privileges = true;

    // Private /tmp (as systemd's PrivateTmp=): an O_PATH fd of a directory
    // that the child, in a mount namespace of its own (mounts below / made
    // slaves, so nothing propagates back to the host), mounts over /tmp and
    // /var/tmp before it drops privileges (two detached clones of it made
    // with open_tree before the clone). -1: the host's /tmp is shared.
    // Borrowed. An fd, not a path, so that nothing in the directory the
    // worker controls can redirect the mount.
    int private_tmp_fd = -1;

    // false (every worker): CAP_SYS_ADMIN, CAP_SYS_PTRACE, CAP_NET_ADMIN,
    // CAP_SYS_CHROOT, CAP_SYS_TIME and CAP_SETPCAP leave the bounding set before exec. true only
    // for the daemon's own tools that need them (criu, which ptraces and restores workers).
    bool keep_supervisor_capabilities = false;

    // RLIMIT_AS (soft and hard) of the new process in bytes; 0 leaves the
    // daemon's. For short-lived helpers (process/helper_process.h): an
    // allocation past it fails in the helper, never in the daemon.
    std::uint64_t address_space_limit = 0;
    // RLIMIT_CORE 0: a helper that crashes leaves no core file with the
    // (untrusted, maybe secret) input it was given.
    bool no_core_dump = false;
};

struct SpawnedProcess {
    pid_t pid = -1;
    // Refers to this very process for as long as it is held, even after it has
    // exited and its pid has been reused: signal and reap through it.
    UniqueFd pidfd;
    // true when clone3(CLONE_INTO_CGROUP) placed the process: it never ran
    // outside its cgroup. false with a cgroup_fd: the child moved itself
    // before doing anything else (fallback for kernels or hierarchies
    // that refuse CLONE_INTO_CGROUP).
    bool born_in_cgroup = false;
};

}  // namespace infervisor
