#include "policy/rule_timer.h"

#include <gtest/gtest.h>

namespace infervisor {
namespace {

using namespace std::chrono_literals;

// Observes, then takes whatever step is due; returns it.
std::optional<RuleStep> tick(RuleTimer& t, const RuleTiming& timing, bool condition,
                             TimePoint now) {
    t.observe(condition, now);
    auto due = t.due(timing, now);
    if (!due) return std::nullopt;
    t.commit(due->step, now);
    return due->step;
}

const TimePoint kTimerT0{std::chrono::hours(1)};

TEST(RuleTimer, FiresOnceHeldForTheDuration) {
    RuleTimer t;
    RuleTiming timing{10s, std::nullopt, std::nullopt};
    EXPECT_FALSE(tick(t, timing, true, kTimerT0));
    EXPECT_FALSE(tick(t, timing, true, kTimerT0 + 5s));
    EXPECT_EQ(tick(t, timing, true, kTimerT0 + 10s), RuleStep::fire);
    EXPECT_TRUE(t.latched());
}

TEST(RuleTimer, ZeroHoldFiresOnTheFirstTrueObservation) {
    RuleTimer t;
    EXPECT_EQ(tick(t, {}, true, kTimerT0), RuleStep::fire);
}

TEST(RuleTimer, OneFalseObservationRestartsTheHold) {
    RuleTimer t;
    RuleTiming timing{10s, std::nullopt, std::nullopt};
    tick(t, timing, true, kTimerT0);
    tick(t, timing, true, kTimerT0 + 8s);
    tick(t, timing, false, kTimerT0 + 9s);
    EXPECT_FALSE(tick(t, timing, true, kTimerT0 + 10s));
    EXPECT_FALSE(tick(t, timing, true, kTimerT0 + 19s));
    auto due = (t.observe(true, kTimerT0 + 20s), t.due(timing, kTimerT0 + 20s));
    ASSERT_TRUE(due);
    EXPECT_EQ(due->held, 10s);
}

TEST(RuleTimer, LatchedUntilTheConditionClears) {
    RuleTimer t;
    RuleTiming timing{0s, std::nullopt, std::nullopt};
    EXPECT_EQ(tick(t, timing, true, kTimerT0), RuleStep::fire);
    for (int s = 1; s < 100; ++s)
        EXPECT_FALSE(tick(t, timing, true, kTimerT0 + std::chrono::seconds(s)));
    EXPECT_FALSE(tick(t, timing, false, kTimerT0 + 100s));
    EXPECT_FALSE(t.latched());
    EXPECT_EQ(tick(t, timing, true, kTimerT0 + 101s), RuleStep::fire);
}

TEST(RuleTimer, CooldownRepeatsWhileStillTrue) {
    RuleTimer t;
    RuleTiming timing{0s, std::nullopt, 60s};
    EXPECT_EQ(tick(t, timing, true, kTimerT0), RuleStep::fire);
    EXPECT_FALSE(tick(t, timing, true, kTimerT0 + 59s));
    EXPECT_EQ(tick(t, timing, true, kTimerT0 + 60s), RuleStep::repeat);
    EXPECT_FALSE(tick(t, timing, true, kTimerT0 + 100s));
    EXPECT_EQ(tick(t, timing, true, kTimerT0 + 120s), RuleStep::repeat);
}

TEST(RuleTimer, EscalatesOnceIfStillTrue) {
    RuleTimer t;
    RuleTiming timing{10s, 30s, std::nullopt};
    tick(t, timing, true, kTimerT0);
    EXPECT_EQ(tick(t, timing, true, kTimerT0 + 10s), RuleStep::fire);
    EXPECT_FALSE(tick(t, timing, true, kTimerT0 + 39s));
    EXPECT_EQ(tick(t, timing, true, kTimerT0 + 40s), RuleStep::escalate);
    EXPECT_FALSE(tick(t, timing, true, kTimerT0 + 100s));
}

TEST(RuleTimer, ClearingCancelsThePendingEscalation) {
    RuleTimer t;
    RuleTiming timing{0s, 30s, std::nullopt};
    EXPECT_EQ(tick(t, timing, true, kTimerT0), RuleStep::fire);
    tick(t, timing, false, kTimerT0 + 20s);
    EXPECT_EQ(tick(t, timing, true, kTimerT0 + 31s), RuleStep::fire)
        << "a fresh start, not an escalation";
}

TEST(RuleTimer, AnUncommittedStepStaysDue) {
    RuleTimer t;
    RuleTiming timing{0s, std::nullopt, std::nullopt};
    t.observe(true, kTimerT0);
    ASSERT_TRUE(t.due(timing, kTimerT0));
    t.observe(true, kTimerT0 + 1s);
    EXPECT_TRUE(t.due(timing, kTimerT0 + 1s));
}

}  // namespace
}  // namespace infervisor
