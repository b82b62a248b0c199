// The preempt ladder (policy/preempt_ladder.h) and what it remembers
// (policy/preempt_history.h): the gentlest step that works on this worker.
#include "policy/preempt_ladder.h"

#include <gtest/gtest.h>

#include "policy/preempt_history.h"
#include "support/byte_units.h"

namespace infervisor {
namespace {

using namespace std::chrono_literals;

PreemptContext host(std::optional<uint64_t> anon, std::optional<uint64_t> swap_free,
                    std::optional<Duration> headroom = std::nullopt,
                    std::optional<uint64_t> unevictable = 0, bool growing = false) {
    return {anon, unevictable, swap_free, headroom, growing};
}

PreemptContext growing(std::optional<uint64_t> anon, std::optional<uint64_t> swap_free) {
    return host(anon, swap_free, std::nullopt, 0, true);
}

TEST(PreemptLadder, SuspendsAPreemptibleWorkerWhoseMemoryFitsInFreeSwap) {
    auto step = choose_preempt_step({}, host(400 * MiB, 1024 * MiB));
    EXPECT_EQ(step.action, Action::suspend);
    EXPECT_EQ(step.why, "suspend: preemptible, swap free 1G for its 400M");
}

TEST(PreemptLadder, DoesNotSuspendWhenSwapCannotHoldIt) {
    EXPECT_EQ(choose_preempt_step({}, host(400 * MiB, 300 * MiB)).why,
              "kill: not suspended (swap free 300M < its 400M), not checkpointed (no checkpoint "
              "of it has completed)");
    EXPECT_EQ(choose_preempt_step({}, host(400 * MiB, 0)).action, Action::kill);
    EXPECT_EQ(choose_preempt_step({}, host(400 * MiB, std::nullopt)).action, Action::kill);
}

TEST(PreemptLadder, DoesNotSuspendMemoryThatIsMostlyUnevictable) {
    auto step = choose_preempt_step({}, host(400 * MiB, 1024 * MiB, std::nullopt, 390 * MiB));
    EXPECT_EQ(step.action, Action::kill);
    EXPECT_NE(step.why.find("its memory is unevictable (390M of 400M: mlocked)"), std::string::npos)
        << step.why;
    // A little locked memory does not stop it.
    EXPECT_EQ(choose_preempt_step({}, host(400 * MiB, 1024 * MiB, std::nullopt, 8 * MiB)).action,
              Action::suspend);
}

TEST(PreemptLadder, NotPreemptibleOrShownUselessGoesToTheNextStep) {
    PreemptFacts not_preemptible{false, "", std::nullopt};
    EXPECT_NE(choose_preempt_step(not_preemptible, host(400 * MiB, 1024 * MiB))
                  .why.find("not preemptible"),
              std::string::npos);
    PreemptFacts useless{true, "its suspension by rule 'r' freed 0B of 400M", 3s};
    auto step = choose_preempt_step(useless, host(400 * MiB, 1024 * MiB));
    EXPECT_EQ(step.action, Action::checkpoint);
    EXPECT_EQ(step.why,
              "checkpoint: not suspended (its suspension by rule 'r' freed 0B of 400M); its last "
              "checkpoint took 3s");
}

TEST(PreemptLadder, ACheckpointNeedsTwiceItsLastTimeBeforeTheHostRunsOut) {
    PreemptFacts facts{false, "", 10s};
    EXPECT_EQ(choose_preempt_step(facts, host(400 * MiB, 0, 20s)).action, Action::checkpoint);
    EXPECT_EQ(choose_preempt_step(facts, host(400 * MiB, 0, 19s)).action, Action::kill);
    // Not falling (no headroom figure): there is time.
    EXPECT_EQ(choose_preempt_step(facts, host(400 * MiB, 0)).action, Action::checkpoint);
}

TEST(PreemptLadder, ASuspensionFreedNothingBelowATenth) {
    EXPECT_TRUE(suspension_freed_nothing(400 * MiB, 0));
    EXPECT_TRUE(suspension_freed_nothing(400 * MiB, 39 * MiB));
    EXPECT_FALSE(suspension_freed_nothing(400 * MiB, 41 * MiB));
    // No memory controller: nothing known before, nothing pushed out.
    EXPECT_TRUE(suspension_freed_nothing(std::nullopt, 0));
    EXPECT_FALSE(suspension_freed_nothing(std::nullopt, 1));
}

TEST(PreemptHistory, RemembersASuspensionThatFreedNothingUntilForgotten) {
    PreemptHistory history;
    TimePoint t{std::chrono::hours(1)};
    EXPECT_EQ(history.facts_of("w", true, std::nullopt, t).no_suspend, "");
    history.suspension_freed_nothing("w", "its suspension by rule 'r' freed 0B of 400M");
    EXPECT_EQ(history.facts_of("w", true, std::nullopt, t + std::chrono::hours(5)).no_suspend,
              "its suspension by rule 'r' freed 0B of 400M");
    EXPECT_EQ(history.facts_of("other", true, std::nullopt, t).no_suspend, "");
    history.forget("w");
    EXPECT_EQ(history.facts_of("w", true, std::nullopt, t).no_suspend, "");
}

TEST(PreemptHistory, AWorkerThatGrowsBackSoonAfterItsResumeIsNotSuspendedAgain) {
    PreemptHistory history;
    TimePoint t{std::chrono::hours(1)};
    history.resumed("w", t);
    auto facts = history.facts_of("w", true, 4s, t + 90s);
    EXPECT_EQ(facts.resumed_ago, 90s);
    EXPECT_EQ(facts.checkpoint_took, 4s);
    auto step = choose_preempt_step(facts, growing(400 * MiB, 1024 * MiB));
    EXPECT_EQ(step.action, Action::checkpoint);
    EXPECT_EQ(step.why,
              "checkpoint: not suspended (it grew back within 1m30s of resume_when's resume: the "
              "suspension did not help); its last checkpoint took 4s");
    // Long after: a new burst, suspended again.
    auto later = history.facts_of("w", true, std::nullopt, t + PreemptHistory::kRegrowWindow);
    EXPECT_EQ(later.resumed_ago, std::nullopt);
    EXPECT_EQ(choose_preempt_step(later, growing(400 * MiB, 1024 * MiB)).action, Action::suspend);
}

// Picked again soon after its resume but holding still (the lowest priority,
// the host's trouble another's): suspended again, not killed.
TEST(PreemptHistory, AResumedWorkerThatHoldsStillIsSuspendedAgain) {
    PreemptHistory history;
    TimePoint t{std::chrono::hours(1)};
    history.resumed("w", t);
    auto facts = history.facts_of("w", true, std::nullopt, t + 60s);
    EXPECT_EQ(choose_preempt_step(facts, host(400 * MiB, 1024 * MiB)).action, Action::suspend);
    EXPECT_EQ(choose_preempt_step(facts, growing(400 * MiB, 1024 * MiB)).action, Action::kill);
}

}  // namespace
}  // namespace infervisor
