#include "services/start_watch.h"

namespace infervisor {

void StartWatch::decide(bool started, std::string why) {
    if (decided_) return;
    decided_ = true;
    started_ = started;
    why_ = std::move(why);
}

void StartWatch::on_event(const Event& event) {
    switch (event.kind) {
        case EventKind::started:
            counts_run_end_ = true;  // from now on an end is this run's
            return;
        case EventKind::ready:
        case EventKind::resumed:  // a start of a suspended worker thaws it
            return decide(true, "");
        case EventKind::start_failed:
        case EventKind::failed:
        case EventKind::parked:
            return decide(false, event.message);
        case EventKind::exited:
        case EventKind::oom_killed:
            if (counts_run_end_) decide(false, "ended before it was ready: " + event.message);
            return;
        case EventKind::waiting:
        case EventKind::restart_waiting_for_memory:
            return decide(false, "not started: " + event.message);
        case EventKind::stopped:
            if (counts_run_end_) decide(false, "stopped before it was ready");
            return;
        default:
            return;
    }
}

void StartWatch::on_state(WorkerState state, const std::string& reason) {
    auto with_reason = [&](std::string what) {
        return reason.empty() ? what : what + " (" + reason + ")";
    };
    switch (state) {
        case WorkerState::running:
            return decide(true, "");
        case WorkerState::failed:
            return decide(false, with_reason("failed"));
        case WorkerState::parked:
            return decide(false, with_reason("parked"));
        case WorkerState::waiting:
            return decide(false, with_reason("not started: waiting for room"));
        case WorkerState::suspended:
            return decide(false, with_reason("suspended"));
        case WorkerState::stopped:
            return decide(false, with_reason("stopped"));
        case WorkerState::starting:
        case WorkerState::stopping:
        case WorkerState::backoff:
            return;  // its events will tell
    }
}

void StartWatch::on_removed() { decide(false, "removed from the configuration by a reload"); }

}  // namespace infervisor
