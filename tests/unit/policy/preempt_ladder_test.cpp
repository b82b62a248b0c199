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
    auto step = choose_preempt_step({}, host(400 * MiB, 1024 * MiB)).step;
    EXPECT_EQ(step.action, Action::suspend);
    EXPECT_EQ(step.why, "suspend: preemptible, swap free 1G for its 400M");
}

// A host rule on the GPUs alone wants the card's memory back: a suspension
// that gives it (a GPU release, an engine's sleep) whatever swap holds; one
// that keeps it is no step at all.
TEST(PreemptLadder, OnAGpuOnlyASuspensionThatGivesBackItsGpuMemory) {
    PreemptContext gpu{12 * GiB, std::nullopt, 0, std::nullopt, false, true};
    auto step = choose_preempt_step({}, gpu).step;
    EXPECT_EQ(step.action, Action::suspend) << "no swap, yet the copy goes to host memory";
    EXPECT_EQ(step.why, "suspend: preemptible, its suspension gives back its 12G of GPU memory");
    PreemptFacts keeps;
    keeps.keeps_gpu = "suspend.gpu is keep";
    step = choose_preempt_step(keeps, gpu).step;
    EXPECT_EQ(step.action, Action::kill);
    EXPECT_EQ(step.why,
              "kill: not suspended (a suspension keeps its GPU memory: suspend.gpu is keep), not "
              "checkpointed (no checkpoint of it has completed)");
    keeps.checkpoint_took = 5s;
    EXPECT_EQ(choose_preempt_step(keeps, gpu).step.action, Action::checkpoint);
    // For the host's memory the same facts change nothing.
    EXPECT_EQ(choose_preempt_step(keeps, host(400 * MiB, 1024 * MiB)).step.action, Action::suspend);
}

TEST(PreemptLadder, DoesNotSuspendWhenSwapCannotHoldIt) {
    EXPECT_EQ(choose_preempt_step({}, host(400 * MiB, 300 * MiB)).step.why,
              "kill: not suspended (swap free 300M < its 400M), not checkpointed (no checkpoint "
              "of it has completed)");
    EXPECT_EQ(choose_preempt_step({}, host(400 * MiB, 0)).step.action, Action::kill);
    EXPECT_EQ(choose_preempt_step({}, host(400 * MiB, std::nullopt)).step.action, Action::kill);
}

TEST(PreemptLadder, DoesNotSuspendMemoryThatIsMostlyUnevictable) {
    auto step = choose_preempt_step({}, host(400 * MiB, 1024 * MiB, std::nullopt, 390 * MiB)).step;
    EXPECT_EQ(step.action, Action::kill);
    EXPECT_NE(step.why.find("its memory is unevictable (390M of 400M: mlocked)"), std::string::npos)
        << step.why;
    // A little locked memory does not stop it.
    EXPECT_EQ(
        choose_preempt_step({}, host(400 * MiB, 1024 * MiB, std::nullopt, 8 * MiB)).step.action,
        Action::suspend);
}

TEST(PreemptLadder, NotPreemptibleOrShownUselessGoesToTheNextStep) {
    PreemptFacts not_preemptible{false, "", std::nullopt};
    EXPECT_NE(choose_preempt_step(not_preemptible, host(400 * MiB, 1024 * MiB))
                  .step.why.find("not preemptible"),
              std::string::npos);
    PreemptFacts useless{true, "its suspension by rule 'r' freed 0B of 400M", 3s};
    auto step = choose_preempt_step(useless, host(400 * MiB, 1024 * MiB)).step;
    EXPECT_EQ(step.action, Action::checkpoint);
    EXPECT_EQ(step.why,
              "checkpoint: not suspended (its suspension by rule 'r' freed 0B of 400M); its last "
              "checkpoint took 3s");
}

TEST(PreemptLadder, ACheckpointNeedsTwiceItsLastTimeBeforeTheHostRunsOut) {
    PreemptFacts facts{false, "", 10s};
    EXPECT_EQ(choose_preempt_step(facts, host(400 * MiB, 0, 20s)).step.action, Action::checkpoint);
    EXPECT_EQ(choose_preempt_step(facts, host(400 * MiB, 0, 19s)).step.action, Action::kill);
    // Not falling (no headroom figure): there is time.
    EXPECT_EQ(choose_preempt_step(facts, host(400 * MiB, 0)).step.action, Action::checkpoint);
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
    auto step = choose_preempt_step(facts, growing(400 * MiB, 1024 * MiB)).step;
    EXPECT_EQ(step.action, Action::checkpoint);
    EXPECT_EQ(step.why,
              "checkpoint: not suspended (it grew back within 1m30s of resume_when's resume: the "
              "suspension did not help); its last checkpoint took 4s");
    // Long after: a new burst, suspended again.
    auto later = history.facts_of("w", true, std::nullopt, t + PreemptHistory::kRegrowWindow);
    EXPECT_EQ(later.resumed_ago, std::nullopt);
    EXPECT_EQ(choose_preempt_step(later, growing(400 * MiB, 1024 * MiB)).step.action,
              Action::suspend);
}

// Picked again soon after its resume but holding still (the lowest priority,
// the host's trouble another's): suspended again, not killed.
TEST(PreemptHistory, AResumedWorkerThatHoldsStillIsSuspendedAgain) {
    PreemptHistory history;
    TimePoint t{std::chrono::hours(1)};
    history.resumed("w", t);
    auto facts = history.facts_of("w", true, std::nullopt, t + 60s);
    EXPECT_EQ(choose_preempt_step(facts, host(400 * MiB, 1024 * MiB)).step.action, Action::suspend);
    EXPECT_EQ(choose_preempt_step(facts, growing(400 * MiB, 1024 * MiB)).step.action, Action::kill);
}

// An Ollama worker: its models are unloaded first, the server keeps running;
// the decision carries the step an unload that frees nothing goes on to.
TEST(PreemptLadder, UnloadsAnOllamaWorkersModelsFirstWithTheNextStepAtHand) {
    PreemptFacts facts;
    facts.unload_bound = 7s;
    auto choice = choose_preempt_step(facts, host(400 * MiB, 1024 * MiB));
    EXPECT_EQ(choice.step.action, Action::unload);
    EXPECT_EQ(choice.step.why, "unload: its server unloads its models and keeps running");
    ASSERT_TRUE(choice.if_unload_fails.has_value());
    EXPECT_EQ(choice.if_unload_fails->action, Action::suspend);
    // No swap: the step after a failed unload is the kill, as without it.
    auto no_swap = choose_preempt_step(facts, host(400 * MiB, 0));
    EXPECT_EQ(no_swap.step.action, Action::unload);
    ASSERT_TRUE(no_swap.if_unload_fails.has_value());
    EXPECT_EQ(no_swap.if_unload_fails->action, Action::kill);
}

// Not preemptible: its clients must not see it frozen, but an unload only
// makes their next answer slower, so it is still the first step.
TEST(PreemptLadder, UnloadsAServerThatIsNotPreemptible) {
    PreemptFacts facts;
    facts.preemptible = false;
    facts.unload_bound = 7s;
    auto choice = choose_preempt_step(facts, host(400 * MiB, 1024 * MiB));
    EXPECT_EQ(choice.step.action, Action::unload);
    ASSERT_TRUE(choice.if_unload_fails.has_value());
    EXPECT_EQ(choice.if_unload_fails->action, Action::kill);
}

// The host runs out sooner than twice the unload's bound: an emergency is
// not delayed by a server that may take its time.
TEST(PreemptLadder, NoUnloadWhenTheHostRunsOutBeforeOneCouldFinish) {
    PreemptFacts facts;
    facts.unload_bound = 7s;
    auto hurried = choose_preempt_step(facts, host(400 * MiB, 1024 * MiB, 13s));
    EXPECT_EQ(hurried.step.action, Action::suspend);
    EXPECT_FALSE(hurried.if_unload_fails.has_value());
    EXPECT_EQ(hurried.step.why,
              "suspend: preemptible, swap free 1G for its 400M (not unloaded: the host runs out "
              "in 13s, an unload may take 7s)");
    EXPECT_EQ(choose_preempt_step(facts, host(400 * MiB, 1024 * MiB, 14s)).step.action,
              Action::unload);
}

TEST(PreemptLadder, OnlyAServerThatUnloadsGetsAnUnload) {
    auto choice = choose_preempt_step({}, host(400 * MiB, 1024 * MiB));
    EXPECT_EQ(choice.step.action, Action::suspend);
    EXPECT_FALSE(choice.if_unload_fails.has_value());
}

// Picked again within half an hour of its unload: the memory came back (or
// never left), so the ladder goes past the unload and says why.
TEST(PreemptHistory, AWorkerPickedAgainSoonAfterItsUnloadIsNotUnloadedAgain) {
    PreemptHistory history;
    TimePoint t{std::chrono::hours(1)};
    history.unloaded("w", t);
    auto facts = history.facts_of("w", true, std::nullopt, t + 5min);
    facts.unload_bound = 7s;
    EXPECT_EQ(facts.unloaded_ago, 5min);
    auto choice = choose_preempt_step(facts, host(400 * MiB, 1024 * MiB));
    EXPECT_EQ(choice.step.action, Action::suspend);
    EXPECT_FALSE(choice.if_unload_fails.has_value());
    EXPECT_EQ(choice.step.why,
              "suspend: preemptible, swap free 1G for its 400M (its models were unloaded 5m "
              "ago and it is picked again: unloading did not help)");
    auto later = history.facts_of("w", true, std::nullopt, t + PreemptHistory::kRegrowWindow);
    later.unload_bound = 7s;
    EXPECT_EQ(later.unloaded_ago, std::nullopt);
    EXPECT_EQ(choose_preempt_step(later, host(400 * MiB, 1024 * MiB)).step.action, Action::unload);
    history.forget("w");
    EXPECT_EQ(history.facts_of("w", true, std::nullopt, t + 1min).unloaded_ago, std::nullopt);
}

}  // namespace
}  // namespace infervisor
