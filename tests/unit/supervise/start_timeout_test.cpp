// start_timeout on real processes: a notify worker that never sends READY=1
// is killed and counts as a failed start for the restart policy and the
// start limit.
#include <gmock/gmock.h>

#include "supervisor_fixture.h"

namespace infervisor::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using K = EventKind;
using namespace std::chrono_literals;

class StartTimeout : public SupervisorFixture {
  protected:
    explicit StartTimeout(bool fake_time = false) : SupervisorFixture(fake_time) {}
    // A notify worker that would take an hour to load its model.
    WorkerSpec mute(const std::string& name, Duration timeout) const {
        auto spec = example(name, {"--load-ms", "3600000"});
        spec.notify = true;
        spec.start_timeout = timeout;
        return spec;
    }
};

// The start timeout on fake time: it fires when the test lets it pass.
class StartTimeoutOnFakeTime : public StartTimeout {
  protected:
    StartTimeoutOnFakeTime() : StartTimeout(true) {}
    // Lets `d` pass, then runs what is ready on the loop.
    void run_for(Duration d) {
        advance(d);
        io_.restart();
        io_.poll();
    }
};

TEST_F(StartTimeoutOnFakeTime, NoReadyInTimeIsAFailedStartUpToTheStartLimit) {
    auto spec = mute("mute", 300ms);
    spec.restart.start_limit_burst = 2;
    supervisor_->apply(config({spec}));
    run_until_event("mute", K::started);
    run_for(299ms);
    EXPECT_EQ(count("mute", K::start_failed), 0u);  // not before its time
    run_for(1ms);
    run_until_event("mute", K::started, 2);  // the backoff passes by itself (kIdlePoll)
    run_for(300ms);
    run_until_event("mute", K::failed);

    EXPECT_THAT(kinds_of("mute"),
                ElementsAre(K::started, K::start_failed, K::exited, K::restarting,  //
                            K::started, K::start_failed, K::exited, K::failed));
    const Event* failed_start = last("mute", K::start_failed);
    EXPECT_EQ(field(*failed_start, "START_TIMEOUT_MS"), "300");
    EXPECT_THAT(failed_start->message, HasSubstr("no READY=1 within 300ms"));
    const Event* exited = last("mute", K::exited);
    EXPECT_EQ(field(*exited, "EXIT_REASON"), "no READY=1 within 300ms");
    EXPECT_EQ(field(*exited, "EXIT_SIGNAL"), "SIGKILL");
    Worker* w = supervisor_->find("mute");
    EXPECT_EQ(w->state(), WorkerState::failed);
    EXPECT_EQ(w->last_exit(), "no READY=1 within 300ms");
    EXPECT_FALSE(w->cgroup().exists());
}

TEST_F(StartTimeoutOnFakeTime, RestartPolicyNeverLeavesItStopped) {
    auto spec = mute("once", 300ms);
    spec.restart.mode = RestartMode::never;
    supervisor_->apply(config({spec}));
    run_until_event("once", K::started);
    run_for(300ms);
    run_until_event("once", K::exited);
    run_until([&] { return supervisor_->find("once")->state() == WorkerState::stopped; });
    EXPECT_THAT(kinds_of("once"), ElementsAre(K::started, K::start_failed, K::exited));
}

TEST_F(StartTimeoutOnFakeTime, ReadyInTimeCancelsIt) {
    auto spec = example("quick", {"--load-ms", "50"});
    spec.notify = true;
    spec.start_timeout = 1s;
    supervisor_->apply(config({spec}));
    run_until_event("quick", K::ready);
    run_for(1500ms);
    EXPECT_EQ(count("quick", K::start_failed), 0u);
    EXPECT_EQ(supervisor_->find("quick")->state(), WorkerState::running);
}

// Worker::ready_at(): when the run became `running` — the end of loading that
// the policy engine's growth rules wait for.
TEST_F(StartTimeout, ReadyAtIsSetAtReadyOneAndClearedBetweenRuns) {
    auto spec = example("loader", {"--load-ms", "300"});
    spec.notify = true;
    spec.start_timeout = 0s;
    supervisor_->apply(config({spec}));
    run_until_event("loader", K::started);
    Worker* w = supervisor_->find("loader");
    EXPECT_EQ(w->state(), WorkerState::starting);
    EXPECT_FALSE(w->ready_at().has_value());
    EXPECT_TRUE(w->signals_readiness());
    run_until_event("loader", K::ready);
    ASSERT_TRUE(w->ready_at().has_value());
    ASSERT_TRUE(w->started_at().has_value());
    EXPECT_GT(*w->ready_at(), *w->started_at());
    bool stopped = false;
    w->stop([&] { stopped = true; });
    run_until([&] { return stopped; });
    EXPECT_FALSE(w->ready_at().has_value());
}

TEST_F(StartTimeout, ReadyAtOfAWorkerWithoutNotifyIsItsStart) {
    supervisor_->apply(config({example("plain", {})}));
    run_until_event("plain", K::started);
    Worker* w = supervisor_->find("plain");
    ASSERT_TRUE(w->ready_at().has_value());
    EXPECT_EQ(w->ready_at(), w->started_at());
    EXPECT_FALSE(w->signals_readiness());
}

TEST_F(StartTimeoutOnFakeTime, ZeroWaitsForever) {
    supervisor_->apply(config({mute("patient", 0s)}));
    run_until_event("patient", K::started);
    run_for(std::chrono::hours(1));
    EXPECT_EQ(count("patient", K::start_failed), 0u);
    EXPECT_EQ(supervisor_->find("patient")->state(), WorkerState::starting);
}

TEST_F(StartTimeoutOnFakeTime, AStopWhileStartingIsAStopNotAFailedStart) {
    supervisor_->apply(config({mute("halted", 500ms)}));
    run_until_event("halted", K::started);
    bool stopped = false;
    supervisor_->find("halted")->stop([&] { stopped = true; });
    run_until([&] { return stopped; });
    run_for(800ms);
    EXPECT_THAT(kinds_of("halted"), ElementsAre(K::started, K::exited, K::stopped));
}

}  // namespace
}  // namespace infervisor::testing
