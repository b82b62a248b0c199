#include "policy/victim.h"

#include <gtest/gtest.h>

namespace infervisor {
namespace {

VictimView worker(std::string name, int priority, std::optional<uint64_t> memory,
                  std::optional<double> growth = std::nullopt, bool is_protected = false) {
    return VictimView{std::move(name), priority, is_protected, memory, growth, std::nullopt};
}

TEST(Victim, LowestPriorityFirst) {
    auto i = pick_victim({worker("big-important", 10, 8ull << 30), worker("small", 0, 1ull << 30)});
    EXPECT_EQ(i, 1u);
}

TEST(Victim, ThenLargestMemory) {
    auto i = pick_victim(
        {worker("a", 0, 1ull << 30), worker("b", 0, 3ull << 30), worker("c", 0, std::nullopt)});
    EXPECT_EQ(i, 1u);
}

TEST(Victim, ThenFastestGrowth) {
    auto i = pick_victim({worker("a", 0, 1ull << 30, 1.0), worker("b", 0, 1ull << 30, 5.0),
                          worker("c", 0, 1ull << 30)});
    EXPECT_EQ(i, 1u);
}

TEST(Victim, AtEqualPriorityARunawayBeforeALargerSteadyWorker) {
    // The field's case: a 300 MB server holding still next to a 215 MB
    // worker leaking 20 MB/s; the host runs low. The leak pays, not the server.
    VictimView steady = worker("steady", 0, 300ull << 20, 0.5);
    steady.growth_bytes_per_min = 1.0 * (1 << 20);
    VictimView leaker = worker("leaker", 0, 215ull << 20, 200.0);
    leaker.growth_bytes_per_min = 1200.0 * (1 << 20);
    EXPECT_EQ(pick_victim({steady, leaker}), 1u);
    // Of two runaways, the faster in bytes.
    VictimView slow = worker("slow", 0, 2ull << 30, 400.0);
    slow.growth_bytes_per_min = 100.0 * (1 << 20);
    EXPECT_EQ(pick_victim({steady, slow, leaker}), 2u);
    // Growth below the floor is noise: then the largest, as before.
    leaker.growth_bytes_per_min = 10.0 * (1 << 20);
    EXPECT_EQ(pick_victim({steady, leaker}), 0u);
    // Priority still comes first.
    leaker.growth_bytes_per_min = 1200.0 * (1 << 20);
    leaker.priority = 5;
    EXPECT_EQ(pick_victim({steady, leaker}), 0u);
}

TEST(Victim, ThenName) { EXPECT_EQ(pick_victim({worker("b", 0, 100), worker("a", 0, 100)}), 1u); }

TEST(Victim, NeverProtected) {
    auto i = pick_victim({worker("huge", -5, 20ull << 30, 50.0, true), worker("tiny", 5, 1)});
    EXPECT_EQ(i, 1u);
}

TEST(Victim, NoneWhenAllProtectedOrNoWorkers) {
    EXPECT_FALSE(pick_victim({worker("a", 0, 100, 1.0, true), worker("b", 0, 100, 1.0, true)}));
    EXPECT_FALSE(pick_victim({}));
}

}  // namespace
}  // namespace infervisor
