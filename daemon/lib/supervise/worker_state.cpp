#include "supervise/worker_state.h"

#include <atomic>
#include <initializer_list>

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

namespace {

using S = WorkerState;

bool has_run(S s) {
    return s == S::starting || s == S::running || s == S::suspended || s == S::stopping;
}

bool one_of(S s, std::initializer_list<S> states) {
    for (S x : states)
        if (s == x) return true;
    return false;
}

std::atomic<size_t> unlisted{0};

}  // namespace

std::string_view move_name(WorkerMove move) {
    switch (move) {
        case WorkerMove::launch:
            return "launch";
        case WorkerMove::wait_for_room:
            return "wait-for-room";
        case WorkerMove::delay_start:
            return "delay-start";
        case WorkerMove::hit_start_limit:
            return "hit-start-limit";
        case WorkerMove::ready:
            return "ready";
        case WorkerMove::suspend:
            return "suspend";
        case WorkerMove::thaw:
            return "thaw";
        case WorkerMove::stop:
            return "stop";
        case WorkerMove::end_run:
            return "end-run";
        case WorkerMove::adopt:
            return "adopt";
    }
    return "unknown";
}

bool move_allowed(WorkerMove move, WorkerState from, WorkerState to) {
    switch (move) {
        case WorkerMove::launch:
            // criu's restore makes a run starting before its process exists.
            return (!has_run(from) || from == S::starting) && one_of(to, {S::starting, S::running});
        case WorkerMove::wait_for_room:
            return !has_run(from) && to == S::waiting;
        case WorkerMove::delay_start:
            return !has_run(from) && to == S::backoff;
        case WorkerMove::hit_start_limit:
            return !has_run(from) && to == S::failed;
        case WorkerMove::ready:
            return from == S::starting && to == S::running;
        case WorkerMove::suspend:
            return one_of(from, {S::starting, S::running}) && to == S::suspended;
        case WorkerMove::thaw:
            return from == S::suspended && one_of(to, {S::starting, S::running});
        case WorkerMove::stop:
            return (one_of(from, {S::starting, S::running, S::suspended}) && to == S::stopping) ||
                   (one_of(from, {S::backoff, S::waiting}) && to == S::stopped);
        case WorkerMove::end_run:
            // From a run's state; or, for a start that failed before its
            // process existed, from where its launch began.
            return one_of(to, {S::stopped, S::backoff, S::failed, S::parked});
        case WorkerMove::adopt:
            return from == S::stopped &&
                   one_of(to, {S::starting, S::running, S::suspended, S::failed, S::parked});
    }
    return false;
}

size_t unlisted_moves() { return unlisted.load(); }

void count_unlisted_move() { ++unlisted; }

}  // namespace infervisor
