#include "supervise/adoption.h"

namespace infervisor {

namespace {

bool has_run(WorkerState s) {
    return s == WorkerState::starting || s == WorkerState::running || s == WorkerState::stopping ||
           s == WorkerState::suspended;
}

RunAction run_action(const FoundWorker& f) {
    if (!f.persisted) return f.cgroup_exists ? RunAction::reap : RunAction::none;
    WorkerState s = f.persisted->state;
    if (has_run(s)) {
        if (f.main_alive) return RunAction::adopt;
        return RunAction::wind_up;
    }
    // No run, yet a populated cgroup: not ours to explain.
    if (f.cgroup_exists && f.cgroup_populated) return RunAction::reap;
    return s == WorkerState::backoff ? RunAction::restart_due : RunAction::restore;
}

}  // namespace

AdoptionPlan plan_adoption(const FoundWorker& found, bool configured, SpecMatch match) {
    AdoptionPlan plan;
    plan.run = run_action(found);
    if (!configured)
        plan.then = ConfigAction::stop;
    else if (plan.run == RunAction::none || plan.run == RunAction::reap)
        plan.then = ConfigAction::keep;  // starts fresh with the spec it has now
    else if (found.state_unreadable)
        plan.then = ConfigAction::keep;  // its spec cannot be told: goes on with today's
    else if (match == SpecMatch::same)
        plan.then = ConfigAction::keep;
    else if (match == SpecMatch::unknown &&
             (plan.run == RunAction::restore || plan.run == RunAction::restart_due))
        plan.then = ConfigAction::keep;  // nothing runs: it gets the spec it has now
    else
        plan.then = ConfigAction::restart;
    return plan;
}

std::string_view to_string(RunAction action) {
    switch (action) {
        case RunAction::none:
            return "none";
        case RunAction::reap:
            return "reap";
        case RunAction::adopt:
            return "adopt";
        case RunAction::wind_up:
            return "wind-up";
        case RunAction::restore:
            return "restore";
        case RunAction::restart_due:
            return "restart-due";
    }
    return "unknown";
}

}  // namespace infervisor
