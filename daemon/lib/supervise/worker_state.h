// WorkerState: where a worker is in its life, as shown to operators.
#pragma once

#include <string_view>

namespace infervisor {

enum class WorkerState {
    stopped,    // not running and not scheduled to (exited with no restart, or stopped)
    starting,   // executed; a notify worker has not sent READY=1 yet
    running,    // up (and ready)
    stopping,   // stop signal sent, waiting for the cgroup to empty
    backoff,    // exited; restart scheduled after a delay
    failed,     // start limit hit or start failed; waits for an explicit start
    parked,     // stopped by a policy rule with `then: park`; waits for an explicit start
    suspended,  // frozen, its memory pushed out (action: suspend); waits for a resume
    waiting,    // its memory.reserve does not fit on the host yet; starts when it does
    // New states go here, and kLastWorkerState below moves with them.
};

// The last enumerator: the Varlink enum test and the state files' parser
// walk every state up to it.
inline constexpr WorkerState kLastWorkerState = WorkerState::waiting;

std::string_view state_name(WorkerState state);

// What operators see (infervisorctl status, the Varlink reply, the metrics'
// state label) is the state's name, except for one case: a parked worker
// whose run ended with the checkpoint its rule asked for (action:
// checkpoint, then: park) shows as "checkpointed" — its next start restores
// that checkpoint. Internally it is parked (started like any parked worker).
inline constexpr std::string_view kCheckpointedStateName = "checkpointed";
// The names shown that are no WorkerState's, in order.
inline constexpr std::string_view kShownOnlyStateNames[] = {kCheckpointedStateName};
std::string_view shown_state_name(WorkerState state, bool checkpointed);

}  // namespace infervisor
