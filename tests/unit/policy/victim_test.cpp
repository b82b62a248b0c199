#include "policy/victim.h"

#include <gtest/gtest.h>

namespace infervisor {
namespace {

VictimView worker(std::string name, int priority, std::optional<uint64_t> memory,
                  std::optional<double> growth = std::nullopt, bool is_protected = false) {
    return VictimView{std::move(name), priority, is_protected, memory, growth};
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
