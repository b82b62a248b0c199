// Issue 27, points 1 and 4: `start` and `restart` answer with what the start
// came to. StartWatch alone (pure), then SupervisorService on real
// processes: a command that does not exist fails with the reason, a notify
// worker's start and restart are answered once the (new) run is ready.
#include <gmock/gmock.h>

#include "services/start_watch.h"
#include "services/supervisor_service.h"
#include "supervise/supervisor_fixture.h"

namespace infervisor::testing {
namespace {

using ::testing::HasSubstr;
using K = EventKind;
using namespace std::chrono_literals;

Event event(K kind, std::string message = {}) { return {kind, "w", std::move(message), {}, 0}; }

TEST(StartWatch, ReadyIsStartedAndAFailedStartSaysWhy) {
    StartWatch ready(StartWatch::Kind::start);
    ready.on_event(event(K::started));
    ready.on_state(WorkerState::starting, "");
    EXPECT_FALSE(ready.decided());
    ready.on_event(event(K::ready));
    EXPECT_TRUE(ready.decided());
    EXPECT_TRUE(ready.started());

    StartWatch broken(StartWatch::Kind::start);
    broken.on_event(event(K::start_failed, "could not start: execve: No such file or directory"));
    broken.on_state(WorkerState::backoff, "");
    EXPECT_TRUE(broken.decided());
    EXPECT_FALSE(broken.started());
    EXPECT_EQ(broken.why(), "could not start: execve: No such file or directory");
}

TEST(StartWatch, ARestartWaitsForTheNewRunNotTheOldOnesEnd) {
    StartWatch watch(StartWatch::Kind::restart);
    watch.on_state(WorkerState::stopping, "");
    watch.on_event(event(K::exited, "exited with code 0"));  // the old run
    watch.on_event(event(K::stopped));
    EXPECT_FALSE(watch.decided());
    watch.on_event(event(K::started));
    watch.on_event(event(K::exited, "exited with code 3"));  // the new one
    EXPECT_TRUE(watch.decided());
    EXPECT_FALSE(watch.started());
    EXPECT_EQ(watch.why(), "ended before it was ready: exited with code 3");
}

TEST(StartWatch, AStartThatChangesNothingIsDecidedByTheState) {
    StartWatch running(StartWatch::Kind::start);
    running.on_state(WorkerState::running, "");
    EXPECT_TRUE(running.started());
    StartWatch waiting(StartWatch::Kind::start);
    waiting.on_state(WorkerState::waiting, "needs 800G; the host can give 21.9G");
    EXPECT_FALSE(waiting.started());
    EXPECT_EQ(waiting.why(), "not started: waiting for room (needs 800G; the host can give 21.9G)");
    StartWatch backoff(StartWatch::Kind::start);
    backoff.on_state(WorkerState::backoff, "restarting in 1s");
    EXPECT_FALSE(backoff.decided());
}

class StartOutcomeTest : public SupervisorFixture {
  protected:
    // Calls `act` and runs the loop until it is answered.
    ActionOutcome answer_of(const std::function<void(SupervisorApi::ActionDone)>& act) {
        std::optional<ActionOutcome> outcome;
        act([&](ActionOutcome o) {
            readies_at_answer = events_.size();
            outcome = std::move(o);
        });
        run_until([&] { return outcome.has_value(); });
        return *outcome;
    }
    size_t readies_at_answer = 0;  // events_.size() when the answer came
    EventRing recent_;
    std::unique_ptr<SupervisorService> service_;
    void SetUp() override {
        SupervisorFixture::SetUp();
        service_ = std::make_unique<SupervisorService>(*ctx_, *supervisor_, recent_,
                                                       SupervisorService::ReloadFunction{});
    }
    void TearDown() override {
        service_.reset();
        SupervisorFixture::TearDown();
    }
    size_t readies_before_answer(const std::string& worker) const {
        size_t n = 0;
        for (size_t i = 0; i < readies_at_answer; ++i)
            if (events_[i].worker == worker && events_[i].kind == K::ready) ++n;
        return n;
    }
};

TEST_F(StartOutcomeTest, AStartOfACommandThatDoesNotExistFailsWithTheReason) {
    auto spec = example("broken", {});
    spec.command = {"/usr/bin/nonexistent-server"};
    supervisor_->apply(config({spec}));
    run_until([&] { return supervisor_->find("broken")->state() == WorkerState::failed; });
    // Issue 27, point 6: status says why, not only "exited with code 127".
    auto status = service_->list_workers().at(0);
    EXPECT_THAT(status.state_reason, HasSubstr("start limit hit: "));
    EXPECT_THAT(status.state_reason, HasSubstr("could not start: "));
    EXPECT_THAT(status.last_exit, HasSubstr("could not start: "));
    EXPECT_THAT(status.last_exit, HasSubstr("execve: No such file or directory"));
    ASSERT_TRUE(status.state_age_usec.has_value());
    auto outcome = answer_of([&](auto done) { service_->start({"broken"}, done); });
    EXPECT_FALSE(outcome.ok());
    EXPECT_EQ(outcome.worker, "broken");
    EXPECT_THAT(outcome.reason, HasSubstr("could not start: "));
    EXPECT_THAT(outcome.reason, HasSubstr("execve: No such file or directory"));
}

TEST_F(StartOutcomeTest, StartAndRestartOfANotifyWorkerAnswerOnceTheRunIsReady) {
    auto spec = example("loader", {"--load-ms", "300"});
    spec.notify = true;
    supervisor_->apply(config({spec}));
    EXPECT_EQ(service_->list_workers().at(0).state_reason, "waiting for READY=1");
    run_until_event("loader", K::ready);
    // Running: answered at once.
    EXPECT_TRUE(answer_of([&](auto done) { service_->start({"loader"}, done); }).ok());
    EXPECT_EQ(readies_before_answer("loader"), 1u);

    EXPECT_TRUE(answer_of([&](auto done) { service_->restart({"loader"}, done); }).ok());
    EXPECT_EQ(readies_before_answer("loader"), 2u);  // the new run's READY=1 came first
    EXPECT_EQ(supervisor_->find("loader")->state(), WorkerState::running);

    answer_of([&](auto done) { service_->stop({"loader"}, done); });
    EXPECT_TRUE(answer_of([&](auto done) { service_->start({"loader"}, done); }).ok());
    EXPECT_EQ(readies_before_answer("loader"), 3u);
}

TEST_F(StartOutcomeTest, AWorkerThatEndsBeforeItIsReadyDidNotStart) {
    auto spec =
        example("crasher", {"--load-ms", "5000", "--crash-after-ms", "100", "--exit-code", "3"});
    spec.notify = true;
    spec.restart.mode = RestartMode::never;
    supervisor_->apply(config({spec}));
    run_until([&] { return supervisor_->find("crasher")->state() == WorkerState::stopped; });
    auto outcome = answer_of([&](auto done) { service_->start({"crasher"}, done); });
    EXPECT_FALSE(outcome.ok());
    EXPECT_EQ(outcome.reason, "ended before it was ready: " + last("crasher", K::exited)->message);
    EXPECT_THAT(outcome.reason, HasSubstr("3"));
}

}  // namespace
}  // namespace infervisor::testing
