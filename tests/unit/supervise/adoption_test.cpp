// The adoption decision: what a starting daemon does with what an earlier
// one left, for every combination that matters.
#include "supervise/adoption.h"

#include <gtest/gtest.h>

namespace infervisor {
namespace {

FoundWorker found(std::optional<WorkerState> state, bool cgroup, bool populated, bool alive) {
    FoundWorker f;
    f.name = "w";
    f.cgroup_exists = cgroup;
    f.cgroup_populated = populated;
    if (state) {
        f.persisted = PersistedWorker{};
        f.persisted->name = "w";
        f.persisted->state = *state;
        f.persisted->pid = 100;
        f.persisted->pid_start_time = 5;
    }
    f.main_alive = alive;
    return f;
}

AdoptionPlan plan(RunAction run, ConfigAction then) { return {run, then}; }

using S = WorkerState;
using R = RunAction;
using C = ConfigAction;

TEST(Adoption, ALiveRunIsAdoptedAndKeptWhenItsSpecIsTheSame) {
    for (S s : {S::starting, S::running, S::stopping})
        EXPECT_EQ(plan_adoption(found(s, true, true, true), true, SpecMatch::same),
                  plan(R::adopt, C::keep))
            << state_name(s);
}

TEST(Adoption, ALiveRunIsRestartedWhenItsSpecChangedOrIsUnknown) {
    EXPECT_EQ(plan_adoption(found(S::running, true, true, true), true, SpecMatch::changed),
              plan(R::adopt, C::restart));
    EXPECT_EQ(plan_adoption(found(S::running, true, true, true), true, SpecMatch::unknown),
              plan(R::adopt, C::restart));
}

// A state file that could not be read (a newer daemon's, damaged): the run
// found in the cgroup goes on with the spec the worker has now, as a restart
// to learn its old one would cost the model load; not configured, it stops.
TEST(Adoption, ARunFoundDespiteAnUnreadableStateFileIsKept) {
    FoundWorker f = found(S::running, true, true, true);
    f.state_unreadable = true;
    EXPECT_EQ(plan_adoption(f, true, SpecMatch::unknown), plan(R::adopt, C::keep));
    EXPECT_EQ(plan_adoption(f, false, SpecMatch::unknown), plan(R::adopt, C::stop));
    // No main process found in the cgroup: its processes are orphans.
    FoundWorker none = found(std::nullopt, true, true, false);
    none.state_unreadable = true;
    EXPECT_EQ(plan_adoption(none, true, SpecMatch::unknown), plan(R::reap, C::keep));
}

TEST(Adoption, ALiveRunNoLongerConfiguredIsAdoptedToBeStopped) {
    EXPECT_EQ(plan_adoption(found(S::running, true, true, true), false, SpecMatch::unknown),
              plan(R::adopt, C::stop));
}

TEST(Adoption, ARunWhoseMainProcessIsGoneIsWoundUp) {
    // Empty cgroup, no cgroup, or the pid lives on as someone else (a
    // recycled pid, or orphans only).
    EXPECT_EQ(plan_adoption(found(S::running, true, false, false), true, SpecMatch::same),
              plan(R::wind_up, C::keep));
    EXPECT_EQ(plan_adoption(found(S::starting, false, false, false), true, SpecMatch::same),
              plan(R::wind_up, C::keep));
    EXPECT_EQ(plan_adoption(found(S::running, true, true, false), true, SpecMatch::same),
              plan(R::wind_up, C::keep));
    EXPECT_EQ(plan_adoption(found(S::running, true, true, false), false, SpecMatch::same),
              plan(R::wind_up, C::stop));
    EXPECT_EQ(plan_adoption(found(S::running, true, false, false), true, SpecMatch::changed),
              plan(R::wind_up, C::restart));
}

TEST(Adoption, ACgroupNoStateExplainsHoldsOrphansToReap) {
    EXPECT_EQ(plan_adoption(found(std::nullopt, true, true, false), true, SpecMatch::unknown),
              plan(R::reap, C::keep));
    EXPECT_EQ(plan_adoption(found(std::nullopt, true, false, false), false, SpecMatch::unknown),
              plan(R::reap, C::stop));
    // A worker that had no run cannot own processes.
    for (S s : {S::stopped, S::failed, S::parked, S::backoff})
        EXPECT_EQ(plan_adoption(found(s, true, true, false), true, SpecMatch::same).run, R::reap)
            << state_name(s);
}

TEST(Adoption, AWorkerWithoutARunKeepsItsState) {
    for (S s : {S::stopped, S::failed, S::parked}) {
        EXPECT_EQ(plan_adoption(found(s, false, false, false), true, SpecMatch::same),
                  plan(R::restore, C::keep))
            << state_name(s);
        EXPECT_EQ(plan_adoption(found(s, true, false, false), true, SpecMatch::same),
                  plan(R::restore, C::keep))
            << state_name(s);
        EXPECT_EQ(plan_adoption(found(s, false, false, false), true, SpecMatch::changed),
                  plan(R::restore, C::restart))
            << state_name(s);
        EXPECT_EQ(plan_adoption(found(s, false, false, false), true, SpecMatch::unknown),
                  plan(R::restore, C::keep))
            << state_name(s);
        EXPECT_EQ(plan_adoption(found(s, false, false, false), false, SpecMatch::same),
                  plan(R::restore, C::stop))
            << state_name(s);
    }
    EXPECT_EQ(plan_adoption(found(S::backoff, false, false, false), true, SpecMatch::same),
              plan(R::restart_due, C::keep));
}

TEST(Adoption, NothingFoundIsAFreshStart) {
    EXPECT_EQ(plan_adoption(found(std::nullopt, false, false, false), true, SpecMatch::unknown),
              plan(R::none, C::keep));
}

}  // namespace
}  // namespace infervisor
