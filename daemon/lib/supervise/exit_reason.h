// ExitReason: why a worker's run ended, combining the process's exit status
// with what its cgroup saw (an OOM kill shows up as SIGKILL plus an
// oom_kill count in memory.events). memory.events counts kills by any OOM
// killer; its `oom` counter only rises when the cgroup itself reached
// memory.max, which tells a kill at the worker's own cap from a host-wide (or
// ancestor's) OOM kill that merely picked one of its processes.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "process/exit_status.h"
#include "supervise/restart_tracker.h"

namespace infervisor {

struct ExitReason {
    ExitStatus status;
    long long oom_kills = 0;        // memory.events oom_kill of this run (any OOM killer)
    long long limit_ooms = 0;       // memory.events oom: memory.max reached, OOM killer invoked
    bool stop_requested = false;    // the daemon asked it to stop
    bool killed_by_policy = false;  // a rule or the watchdog killed it
    // The run was adopted from an earlier daemon, or ended while no daemon
    // ran: no one could reap the main process, so `status` means nothing.
    bool status_unknown = false;
    bool while_unsupervised = false;  // it ended while no daemon ran
    // Set when a notify worker was killed for sending no READY=1 within this.
    std::optional<Duration> no_ready_within;
    std::string awaited = "READY=1";  // what did not come within no_ready_within
    // Set when a health probe's failure made the daemon kill the run:
    // "liveness probe failed 3 times in a row: no answer within 1s".
    std::string kill_reason;
    // Set when the run never ran: why it could not be started ("spawn
    // /usr/bin/x: execve: No such file or directory").
    std::string start_error;

    bool oom_killed() const {
        return oom_kills > 0 && (status_unknown || (status.kind == ExitStatus::Kind::signaled &&
                                                    status.signal == SIGKILL));
    }
    // The kill came from the worker's own memory.max, not from outside.
    bool oom_at_own_limit() const { return oom_killed() && limit_ooms > 0; }
    ExitClass exit_class() const {
        return status.success() && !status_unknown && !oom_killed() && !no_ready_within
                   ? ExitClass::clean
                   : ExitClass::failure;
    }
    // "no READY=1 within 1m30s", "killed: liveness probe failed ...",
    // "oom-killed (memory.max reached)",
    // "oom-killed by a host-wide OOM kill (memory.max not reached)",
    // "exited with code 3", "killed by SIGSEGV (core dumped)",
    // "exited while the supervisor was down (exit status unknown)",
    // "killed by SIGKILL while the supervisor was down".
    std::string describe() const;
    // The journal fields every `exited` event carries: OOM_KILLS, LIMIT_OOMS,
    // EXIT_REASON, then EXIT_STATUS=unknown, EXIT_CODE or EXIT_SIGNAL.
    void append_fields(std::vector<std::pair<std::string, std::string>>& fields) const;
};

}  // namespace infervisor
