// Re-executing the daemon in place, as systemd's daemon-reexec does: the
// same pid, in the same cgroup, so systemd sees no end of the service and
// kills no worker; the new image adopts the workers from their state files
// (supervise/adoption.h). Used for
//   - upgrades: SIGUSR2 (`systemctl kill -s SIGUSR2 --kill-whom=main
//     infervisord`) runs the binary now at the path this one was started
//     from;
//   - crashes: a fatal signal (SIGSEGV, SIGBUS, SIGILL, SIGFPE, and a
//     SIGABRT the daemon raised itself, as std::terminate does) and an
//     internal error caught on the event loop re-execute instead of ending.
//     A SIGABRT from another process (systemd's watchdog) is not caught.
// A crash loop does not re-execute forever: after kMaxQuickReexecs
// re-executions within kQuickWindow the daemon ends as before; systemd then
// restarts it, and the new daemon adopts the workers from their own unit
// (cgroup/cgroup_tree.h, Home::anchor), or starts them afresh when they
// lived in the daemon's own cgroup. A re-execution is still the better way
// where it is possible: the same pid stays the workers' parent, so their
// exit statuses stay known. See infervisord(8), ADOPTION.
#pragma once

#include <chrono>
#include <string>

namespace infervisor {

inline constexpr int kMaxQuickReexecs = 3;
inline constexpr std::chrono::seconds kQuickWindow{60};

// Set (by the previous image) in the environment of a re-executed daemon:
// "COUNT:FIRST_USEC:REASON" (CLOCK_MONOTONIC of the first quick re-exec).
inline constexpr const char* kReexecEnv = "INFERVISOR_REEXEC";

struct ReexecOrigin {
    bool reexecuted = false;  // this image was started by a re-execution
    int count = 0;            // quick re-executions so far
    std::string reason;       // why the previous image re-executed
};

// What the environment says about how this image was started.
ReexecOrigin reexec_origin();

// Records argv and the binary's path, prepares what a re-execution from a
// signal handler needs (nothing may be allocated there), and installs the
// fatal-signal handlers unless the crash-loop limit is reached. Call once,
// early.
void prepare_reexec();

// Re-executes now (for an upgrade or an internal error). Returns only when
// execve failed or the crash-loop limit is reached, with the reason.
std::string reexec_now(const std::string& reason);

}  // namespace infervisor
