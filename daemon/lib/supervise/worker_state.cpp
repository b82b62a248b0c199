#include "supervise/worker_state.h"

namespace infervisor {

std::string_view state_name(WorkerState state) {
    switch (state) {
        case WorkerState::stopped:
            return "stopped";
        case WorkerState::starting:
            return "starting";
        case WorkerState::running:
            return "running";
        case WorkerState::stopping:
            return "stopping";
        case WorkerState::backoff:
            return "backoff";
        case WorkerState::failed:
            return "failed";
        case WorkerState::parked:
            return "parked";
        case WorkerState::suspended:
            return "suspended";
        case WorkerState::waiting:
            return "waiting";
    }
    return "unknown";
}

std::string_view shown_state_name(WorkerState state, bool checkpointed) {
    return state == WorkerState::parked && checkpointed ? kCheckpointedStateName
                                                        : state_name(state);
}

}  // namespace infervisor
