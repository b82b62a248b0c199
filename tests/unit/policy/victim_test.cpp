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

TEST(Victim, ALoadingGrowerBeforeTheSteadyLargerServer) {
    // Issue 25, case 1: a steady 368 MiB server and a batch job that has
    // no serving phase yet (no notify, no probes: loading while it grows)
    // growing 20 MiB/s at 300 MiB. The grower is the cause and pays; its
    // growth is over the recent window whatever its phase.
    VictimView server = worker("server", 0, 380ull << 20);
    server.memory_anon = 368ull << 20;
    server.growth_bytes_per_min = 0.0;
    VictimView batch = worker("batch", 0, 300ull << 20);  // no memory.growth: loading
    batch.memory_anon = 298ull << 20;
    batch.growth_bytes_per_min = 20.0 * 60 * (1 << 20);
    std::vector<VictimView> both{server, batch};
    ASSERT_EQ(pick_victim(both), 1u);
    EXPECT_EQ(explain_victim(both, 1),
              "growing 20.0 MiB/s (anon 298.0 MiB); others: server +0.0 MiB/s 368.0 MiB");
    // Holding still, the larger one goes, and the journal says so.
    batch.growth_bytes_per_min = 0.0;
    both = {server, batch};
    ASSERT_EQ(pick_victim(both), 0u);
    EXPECT_EQ(explain_victim(both, 0),
              "largest, none growing (anon 368.0 MiB); others: batch +0.0 MiB/s 298.0 MiB");
}

TEST(Victim, SizeIsAnonymousMemoryWhereKnown) {
    // A server whose memory.current is mostly the page cache of its mmapped
    // weights is smaller than it looks.
    VictimView mmapper = worker("mmapper", 0, 900ull << 20);
    mmapper.memory_anon = 100ull << 20;
    VictimView heap = worker("heap", 0, 500ull << 20);
    heap.memory_anon = 480ull << 20;
    EXPECT_EQ(victim_size(mmapper), 100ull << 20);
    EXPECT_EQ(pick_victim({mmapper, heap}), 1u);
    mmapper.memory_anon.reset();
    EXPECT_EQ(pick_victim({mmapper, heap}), 0u) << "without anon: memory.current";
}

TEST(Victim, TheReasonNamesPriorityProtectionAndUnknowns) {
    VictimView low = worker("low", -1, 100ull << 20);
    VictimView vault = worker("vault", -5, 900ull << 20, std::nullopt, true);
    VictimView high = worker("high", 3, 800ull << 20);
    std::vector<VictimView> all{low, vault, high};
    ASSERT_EQ(pick_victim(all), 0u);
    EXPECT_EQ(explain_victim(all, 0),
              "lowest priority (-1), largest, none growing (memory 100.0 MiB); others: vault "
              "protected priority -5, high growth unknown 800.0 MiB priority 3");
    EXPECT_EQ(explain_victim({low}, 0), "the only candidate (memory 100.0 MiB)");
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
