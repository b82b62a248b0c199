// Adoption: what a starting daemon does with each worker an earlier daemon
// left behind (after an in-place re-execution; and after a crash, a SIGKILL,
// a watchdog kill or `systemctl restart`, for the workers live in a unit of
// their own that systemd leaves running: cgroup/cgroup_tree.h, see
// infervisord(8), ADOPTION). A pure decision, from what was found for one worker name
// and what the configuration says now; the Supervisor carries it out
// (Supervisor::adopt_leftovers).
//
// The rules:
//   - A cgroup that no state file explains, or whose state file says the
//     worker had no run (stopped, failed, parked), holds orphans: they are
//     killed and the cgroup removed (leftover-reaped). Nothing in a worker's
//     cgroup is ever taken for a new worker.
//   - A run (starting, running, stopping) whose main process still lives —
//     the same pid with the same start time, in the worker's cgroup — is
//     adopted: it keeps serving.
//   - A run whose main process is gone exited while no daemon watched: the
//     exit is journaled with an unknown status, what is left in the cgroup
//     is killed, and the restart policy applies (as for any failure).
//   - A worker with no run keeps its state and counters: stopped and parked
//     and failed stay so; one waiting in backoff restarts now.
//   - A state file this daemon cannot read (written by a newer daemon before
//     a package downgrade, or damaged) never costs a running worker its
//     model: when its cgroup is populated, the run is adopted from the
//     cgroup (its main process is the one whose parent lives outside it,
//     the oldest if several: Supervisor::adopt_one), as running, or still
//     suspended if its cgroup is frozen; its counters start afresh, and it
//     keeps the spec it has now (its old spec cannot be told, and a restart
//     to find out would cost the load).
// Then the configuration: a worker no longer configured is stopped (its
// state dropped); one whose spec changed is restarted as a reload would
// restart it, and so is a run whose old spec cannot be told (a worker with
// no run then just takes the spec it has now: a parked worker stays parked);
// an unchanged one goes on.
#pragma once

#include <optional>
#include <string>

#include "supervise/persisted_worker.h"

namespace infervisor {

struct FoundWorker {
    std::string name;
    bool cgroup_exists = false;
    bool cgroup_populated = false;
    std::optional<PersistedWorker> persisted;  // nullopt: no (valid) state file
    // A state file exists but could not be read; `persisted` then describes
    // what was found in the cgroup, if a main process was found there.
    bool state_unreadable = false;
    // The persisted main pid lives, has the persisted start time and is in
    // the worker's cgroup.
    bool main_alive = false;
};

enum class SpecMatch { same, changed, unknown };

enum class RunAction {
    none,         // nothing to take over: a configured worker starts as usual
    reap,         // orphans in a cgroup: kill them, remove the cgroup (leftover-reaped)
    adopt,        // the run goes on under this daemon (adopted)
    wind_up,      // the main process exited unwatched: journal it, kill the rest
    restore,      // no run: keep the state (stopped, failed, parked) and counters
    restart_due,  // was waiting in backoff: its restart is due now
};

enum class ConfigAction {
    keep,     // configured, same spec
    restart,  // configured, spec changed or unknown: restart as a reload would
    stop,     // no longer configured: stop (adopted run) or just forget
};

struct AdoptionPlan {
    RunAction run = RunAction::none;
    ConfigAction then = ConfigAction::keep;
    bool operator==(const AdoptionPlan&) const = default;
};

// `configured`: the name is in the configuration now; `match`: its spec
// compared with the one the persisted run was started with.
AdoptionPlan plan_adoption(const FoundWorker& found, bool configured, SpecMatch match);

std::string_view to_string(RunAction action);

}  // namespace infervisor
