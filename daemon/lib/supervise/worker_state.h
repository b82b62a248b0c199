// WorkerState: where a worker is in its life, as shown to operators.
#pragma once

#include <cstddef>
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

// The lifecycle: every move a Worker makes between states, in one table
// (move_allowed(); infervisord(8), STATES, lists the same). A worker with a
// run is starting, running, suspended or stopping; one without is stopped,
// backoff, failed, parked or waiting.
enum class WorkerMove {
    launch,           // no run -> starting (held until READY=1 or its gate
                      // probe) or running (nothing to wait for); criu's
                      // restore is starting, then a launch again
    wait_for_room,    // no run -> waiting: its memory.reserve does not fit
    delay_start,      // no run -> backoff: someone else holds a lock on its dirs
    hit_start_limit,  // no run -> failed: too many starts within the interval
    ready,            // starting -> running: READY=1, the gate probe's first pass
    suspend,          // starting, running -> suspended (frozen, memory pushed out)
    thaw,             // suspended -> the state it was suspended in
    stop,             // starting, running, suspended -> stopping (by hand or a
                      // rule); backoff, waiting -> stopped
    end_run,          // the run ended (or its start failed) -> stopped, backoff
                      // (a restart is due), failed (start limit) or parked
    adopt,            // stopped (a new daemon's worker) -> what an earlier
                      // daemon left: a run (starting, running, suspended) or
                      // a state (failed, parked)
};
inline constexpr WorkerMove kLastWorkerMove = WorkerMove::adopt;

std::string_view move_name(WorkerMove move);
// Whether the lifecycle has `move` from `from` to `to`.
bool move_allowed(WorkerMove move, WorkerState from, WorkerState to);
// How many moves the table lacked so far, in this process (each is logged
// as a bug where it happens); tests assert none.
size_t unlisted_moves();
void count_unlisted_move();

// What operators see (infervisorctl status, the Varlink reply, the metrics'
// state label) is the state's name, except for one case: a parked worker
// whose run ended with the checkpoint its rule asked for (action:
// checkpoint, then: park) shows as "checkpointed" — its next start restores
// that checkpoint. Internally it is parked (started like any parked worker).
inline constexpr std::string_view kCheckpointedStateName = "checkpointed";
// The names shown that are no WorkerState's, in order. Every name shown, in
// this order, is listed in view/worker_view.h (kShownStates).
inline constexpr std::string_view kShownOnlyStateNames[] = {kCheckpointedStateName};
std::string_view shown_state_name(WorkerState state, bool checkpointed);

}  // namespace infervisor
