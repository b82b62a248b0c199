#include "probe/probe_tracker.h"

#include <gtest/gtest.h>

#include "support/fake_clock.h"

namespace infervisor {
namespace {

ProbeOutcome ok() { return {true, "HTTP 200", 200}; }
ProbeOutcome bad() { return {false, "HTTP 503", 503}; }

ProbeSpec spec_with(int64_t failures, int64_t successes) {
    ProbeSpec spec;
    spec.port = 80;
    spec.interval = 10s;
    spec.timeout = 1s;
    spec.failure_threshold = failures;
    spec.success_threshold = successes;
    return spec;
}

class ProbeTrackerTest : public ::testing::Test {
  protected:
    // One attempt that answers `outcome` after `latency`; the clock then sits
    // at the next due time.
    std::optional<ProbeChange> attempt(ProbeTracker& t, ProbeOutcome outcome,
                                       Duration latency = 10ms) {
        EXPECT_TRUE(t.begin_attempt());
        clock.advance(latency);
        auto change = t.finish_attempt(std::move(outcome));
        clock.advance(std::chrono::duration_cast<Duration>(*t.next_attempt_at() - clock.now()));
        return change;
    }
    FakeClock clock;
};

TEST_F(ProbeTrackerTest, PassesAfterSuccessThresholdInARow) {
    ProbeTracker t(spec_with(3, 2), clock);
    EXPECT_EQ(t.verdict(), ProbeVerdict::unknown);
    EXPECT_FALSE(attempt(t, ok()));
    auto change = attempt(t, ok());
    ASSERT_TRUE(change);
    EXPECT_EQ(change->from, ProbeVerdict::unknown);
    EXPECT_EQ(change->to, ProbeVerdict::passing);
    EXPECT_EQ(change->streak, 2);
    EXPECT_EQ(change->outcome.http_status, 200);
    EXPECT_EQ(change->outcome.latency, 10ms);
    EXPECT_FALSE(attempt(t, ok()));  // no change, no event
}

TEST_F(ProbeTrackerTest, FailsAfterFailureThresholdInARowAndRecovers) {
    ProbeTracker t(spec_with(3, 1), clock);
    ASSERT_TRUE(attempt(t, ok()));
    EXPECT_FALSE(attempt(t, bad()));
    EXPECT_FALSE(attempt(t, bad()));
    EXPECT_EQ(t.consecutive_failures(), 2);
    auto change = attempt(t, bad());
    ASSERT_TRUE(change);
    EXPECT_EQ(change->from, ProbeVerdict::passing);
    EXPECT_EQ(change->to, ProbeVerdict::failing);
    EXPECT_EQ(change->streak, 3);
    EXPECT_EQ(t.last_failure()->detail, "HTTP 503");
    EXPECT_EQ(t.failures(), 3u);
    auto back = attempt(t, ok());
    ASSERT_TRUE(back);
    EXPECT_EQ(back->to, ProbeVerdict::passing);
    EXPECT_EQ(t.consecutive_failures(), 0);
    EXPECT_EQ(t.last_failure()->detail, "HTTP 503");  // the last failure stays on record
}

TEST_F(ProbeTrackerTest, FlappingNeverCompletesAStreak) {
    ProbeTracker t(spec_with(2, 2), clock);
    ASSERT_TRUE(attempt(t, ok()) == std::nullopt);
    for (int i = 0; i < 50; ++i) {
        EXPECT_FALSE(attempt(t, bad()));
        EXPECT_FALSE(attempt(t, ok()));
    }
    EXPECT_EQ(t.verdict(), ProbeVerdict::unknown);
    EXPECT_EQ(t.attempts(), 101u);
    EXPECT_EQ(t.failures(), 50u);
}

TEST_F(ProbeTrackerTest, FlappingAroundPassingStaysPassing) {
    ProbeTracker t(spec_with(3, 1), clock);
    ASSERT_TRUE(attempt(t, ok()));
    for (int i = 0; i < 20; ++i) {
        EXPECT_FALSE(attempt(t, bad()));
        EXPECT_FALSE(attempt(t, bad()));
        EXPECT_FALSE(attempt(t, ok()));
    }
    EXPECT_EQ(t.verdict(), ProbeVerdict::passing);
}

TEST_F(ProbeTrackerTest, ThresholdZeroNeverFails) {
    ProbeTracker t(spec_with(0, 1), clock);
    for (int i = 0; i < 1000; ++i) EXPECT_FALSE(attempt(t, bad()));
    EXPECT_EQ(t.verdict(), ProbeVerdict::unknown);
    EXPECT_EQ(t.consecutive_failures(), 1000);
    EXPECT_TRUE(attempt(t, ok()));
}

TEST_F(ProbeTrackerTest, ALateAnswerIsATimeoutWhateverItSaid) {
    ProbeTracker t(spec_with(1, 1), clock);
    auto change = attempt(t, ok(), 1500ms);
    ASSERT_TRUE(change);
    EXPECT_EQ(change->to, ProbeVerdict::failing);
    EXPECT_FALSE(change->outcome.passed);
    EXPECT_EQ(change->outcome.latency, 1500ms);
    EXPECT_EQ(change->outcome.detail, "HTTP 200 after 1s500ms, over the timeout of 1s");
    // Exactly at the timeout still counts.
    auto in_time = attempt(t, ok(), 1s);
    ASSERT_TRUE(in_time);
    EXPECT_EQ(in_time->to, ProbeVerdict::passing);
}

TEST_F(ProbeTrackerTest, SchedulesFromTheStartOfTheLastAttemptOneAtATime) {
    ProbeSpec spec = spec_with(3, 1);
    spec.initial_delay = 5s;
    ProbeTracker t(spec, clock);
    const TimePoint start = clock.now();
    EXPECT_EQ(*t.next_attempt_at(), start + 5s);
    clock.advance(5s);
    auto deadline = t.begin_attempt();
    ASSERT_TRUE(deadline);
    EXPECT_EQ(*deadline, start + 6s);
    EXPECT_FALSE(t.next_attempt_at());  // in flight: nothing else is due
    EXPECT_FALSE(t.begin_attempt());    // and nothing else may begin
    clock.advance(300ms);
    t.finish_attempt(ok());
    EXPECT_EQ(*t.next_attempt_at(), start + 15s);
}

TEST_F(ProbeTrackerTest, AnAttemptThatOutlivesTheIntervalDelaysTheNext) {
    ProbeSpec spec = spec_with(3, 1);
    ProbeTracker t(spec, clock);
    t.begin_attempt();
    clock.advance(12s);  // e.g. an exec probe whose kill took long
    t.finish_attempt(bad());
    EXPECT_EQ(*t.next_attempt_at(), clock.now());
}

TEST_F(ProbeTrackerTest, FinishWithoutBeginIsIgnored) {
    ProbeTracker t(spec_with(1, 1), clock);
    EXPECT_FALSE(t.finish_attempt(bad()));
    EXPECT_EQ(t.attempts(), 0u);
    EXPECT_EQ(t.verdict(), ProbeVerdict::unknown);
}

TEST_F(ProbeTrackerTest, ResetStartsANewRun) {
    ProbeTracker t(spec_with(1, 1), clock);
    ASSERT_TRUE(attempt(t, bad()));
    t.begin_attempt();
    t.reset();
    EXPECT_EQ(t.verdict(), ProbeVerdict::unknown);
    EXPECT_FALSE(t.in_flight());
    EXPECT_FALSE(t.last_failure());
    EXPECT_EQ(t.attempts(), 0u);
    EXPECT_EQ(*t.next_attempt_at(), clock.now());
}

}  // namespace
}  // namespace infervisor
