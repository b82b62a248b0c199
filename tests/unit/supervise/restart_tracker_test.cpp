#include "supervise/restart_tracker.h"

#include <gtest/gtest.h>

#include "support/fake_clock.h"

namespace infervisor {
namespace {

using RestartAction = RestartVerdict::Action;  // unique: tests are unity-built
using namespace std::chrono_literals;

RestartSpec spec(RestartMode mode) {
    RestartSpec s;
    s.mode = mode;
    s.backoff_initial = 1s;
    s.backoff_max = 10s;
    s.start_limit_burst = 5;
    s.start_limit_interval = 1min;
    return s;
}

TEST(RestartTracker, PolicyDecidesWhetherToRestart) {
    FakeClock clock;
    RestartTracker never(spec(RestartMode::never), clock);
    RestartTracker on_failure(spec(RestartMode::on_failure), clock);
    RestartTracker always(spec(RestartMode::always), clock);
    for (auto* t : {&never, &on_failure, &always}) ASSERT_TRUE(t->try_start());
    EXPECT_EQ(never.on_exit(ExitClass::failure).action, RestartAction::stay_stopped);
    EXPECT_EQ(on_failure.on_exit(ExitClass::clean).action, RestartAction::stay_stopped);
    EXPECT_EQ(on_failure.on_exit(ExitClass::failure).action, RestartAction::restart);
    EXPECT_EQ(always.on_exit(ExitClass::clean).action, RestartAction::restart);
}

TEST(RestartTracker, BackoffDoublesUpToTheMaximum) {
    FakeClock clock;
    auto s = spec(RestartMode::on_failure);
    s.start_limit_burst = 100;
    RestartTracker t(s, clock);
    std::vector<Duration> delays;
    for (int i = 0; i < 6; ++i) {
        ASSERT_TRUE(t.try_start());
        clock.advance(100ms);
        auto v = t.on_exit(ExitClass::failure);
        ASSERT_EQ(v.action, RestartAction::restart);
        EXPECT_EQ(v.attempt, i + 1);
        delays.push_back(v.delay);
        clock.advance(v.delay);
    }
    EXPECT_EQ(delays, (std::vector<Duration>{1s, 2s, 4s, 8s, 10s, 10s}));
}

TEST(RestartTracker, AHealthyRunResetsTheBackoff) {
    FakeClock clock;
    RestartTracker t(spec(RestartMode::on_failure), clock);
    ASSERT_TRUE(t.try_start());
    EXPECT_EQ(t.on_exit(ExitClass::failure).delay, 1s);
    ASSERT_TRUE(t.try_start());
    EXPECT_EQ(t.on_exit(ExitClass::failure).delay, 2s);
    ASSERT_TRUE(t.try_start());
    clock.advance(11s);  // ran longer than backoff_max
    EXPECT_EQ(t.on_exit(ExitClass::failure).delay, 1s);
}

TEST(RestartTracker, CrashLoopTripsTheStartLimit) {
    FakeClock clock;
    RestartTracker t(spec(RestartMode::always), clock);
    int restarts = 0;
    for (;;) {
        ASSERT_TRUE(t.try_start());
        clock.advance(10ms);
        auto v = t.on_exit(ExitClass::failure);
        if (v.action == RestartAction::start_limit_hit) break;
        ASSERT_EQ(v.action, RestartAction::restart);
        ++restarts;
        clock.advance(v.delay);
        ASSERT_LT(restarts, 100);
    }
    EXPECT_EQ(restarts, 4);  // 5 starts in the interval, then the breaker trips
    EXPECT_FALSE(t.try_start());
    t.reset();  // an operator's start
    EXPECT_TRUE(t.try_start());
}

TEST(RestartTracker, StartsOutsideTheIntervalDoNotCount) {
    FakeClock clock;
    auto s = spec(RestartMode::always);
    s.backoff_max = 30s;
    RestartTracker t(s, clock);
    for (int i = 0; i < 20; ++i) {
        ASSERT_TRUE(t.try_start()) << i;
        clock.advance(20s);  // 3 starts a minute stay under a burst of 5
        ASSERT_EQ(t.on_exit(ExitClass::failure).action, RestartAction::restart);
    }
}

TEST(RestartTracker, AHistoryCarriedOverToANewTrackerKeepsBackoffAndStartLimit) {
    FakeClock clock;
    RestartTracker before(spec(RestartMode::on_failure), clock);
    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(before.try_start());
        clock.advance(100ms);
        ASSERT_EQ(before.on_exit(ExitClass::failure).action, RestartAction::restart);
    }
    RestartTracker after(spec(RestartMode::on_failure), clock);  // the next daemon's
    after.restore(before.history());
    EXPECT_EQ(after.history(), before.history());
    EXPECT_EQ(after.total_restarts(), 3u);
    ASSERT_TRUE(after.try_start());  // start 4 of 5
    clock.advance(100ms);
    auto v = after.on_exit(ExitClass::failure);
    ASSERT_EQ(v.action, RestartAction::restart);
    EXPECT_EQ(v.attempt, 4);
    EXPECT_EQ(v.delay, 8s);
    ASSERT_TRUE(after.try_start());  // 5 of 5
    EXPECT_EQ(after.on_exit(ExitClass::failure).action, RestartAction::start_limit_hit);
}

}  // namespace
}  // namespace infervisor
