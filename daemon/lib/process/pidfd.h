// Operations on a process through its pidfd. A pidfd names one process for its
// whole life, so none of these can hit an unrelated process that was given a
// recycled pid. The pidfd becomes readable when the process exits: the event
// loop waits for that, then calls reap().
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "process/exit_status.h"

namespace infervisor {

// pidfd_open: a pidfd (O_CLOEXEC) for an existing process, e.g. one that a
// worker left behind. For a child, prefer the pidfd spawn_process returns.
Result<UniqueFd> open_pidfd(pid_t pid);

// Collects the exit status of a child of this process if it has exited:
// waitid(P_PIDFD, WEXITED | WNOHANG). nullopt while it still runs. Once reaped,
// a second call fails with ECHILD.
Result<std::optional<ExitStatus>> reap(int pidfd);

// Blocks until the child exits, then reaps it. For shutdown paths and tests;
// the event loop uses reap() when the pidfd is readable.
Result<ExitStatus> wait_for_exit(int pidfd);

// pidfd_send_signal. Succeeds (to no effect) on an exited but unreaped child;
// ESRCH once it has been reaped.
Result<void> send_signal(int pidfd, int sig);

// Sends `sig` to every process that `list` names (e.g. a cgroup's
// cgroup.procs) without the pid-reuse race of read-then-kill(2): each pid
// is opened as a pidfd, then `list` is asked again, and only a pid that it
// still names is signalled, through its pidfd. A process that exited and
// whose pid went to someone else between the first listing and the pidfd is
// not in the second listing (or, if the newcomer is listed, the pidfd names
// the old process, which is gone: ESRCH, nothing sent). Pids <= 0 are never
// signalled. Returns how many processes were signalled.
Result<std::size_t> signal_listed(const std::function<Result<std::vector<pid_t>>()>& list, int sig);

// process_mrelease (kernel 5.15+): frees the memory of a process that is being
// killed right away instead of waiting for its exit to get scheduled, which
// matters when the host is out of memory. Only valid after SIGKILL (EINVAL if the
// process is not dying); ESRCH once its memory is gone.
Result<void> release_memory(int pidfd);

// release_memory on a thread of its own, with a duplicate of `pidfd` (the
// caller keeps and may close its own). The kernel frees the whole address
// space in the caller's context, which for a worker of some GiB (some of it
// in swap) takes a while: the event loop must not wait for it. Failures are
// ignored: the kernel frees the memory anyway once the process gets to exit.
void release_memory_in_background(int pidfd);

}  // namespace infervisor
