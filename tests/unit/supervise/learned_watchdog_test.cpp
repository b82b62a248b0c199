// The watchdog learned from a worker's own heartbeats, on a driven clock.
#include "supervise/learned_watchdog.h"

#include <gtest/gtest.h>

namespace infervisor {
namespace {

using namespace std::chrono_literals;

TEST(LearnedWatchdog, ArmsAtTheThirdHeartbeatWithFiveTimesTheLongestInterval) {
    LearnedWatchdog w;
    TimePoint t{1h};
    EXPECT_EQ(w.on_heartbeat(t), std::nullopt);
    EXPECT_EQ(w.on_heartbeat(t + 3s), std::nullopt);
    EXPECT_FALSE(w.armed());
    EXPECT_EQ(w.on_heartbeat(t + 7s), Duration(20s));  // 5 x 4s
    EXPECT_TRUE(w.armed());
    EXPECT_EQ(w.longest_interval(), Duration(4s));
}

TEST(LearnedWatchdog, NeverUnderTenSecondsNorOverAnHour) {
    LearnedWatchdog fast;
    TimePoint t{1h};
    for (int i = 0; i < 3; ++i) fast.on_heartbeat(t + i * 100ms);
    EXPECT_EQ(fast.timeout(), Duration(10s));
    LearnedWatchdog slow;
    for (int i = 0; i < 3; ++i) slow.on_heartbeat(t + i * 20min);
    EXPECT_EQ(slow.timeout(), Duration(1h));
}

TEST(LearnedWatchdog, OnlyGrowsWithWhatItSees) {
    LearnedWatchdog w;
    TimePoint t{1h};
    w.on_heartbeat(t);
    w.on_heartbeat(t + 2s);
    w.on_heartbeat(t + 4s);
    EXPECT_EQ(w.timeout(), Duration(10s));
    EXPECT_EQ(w.on_heartbeat(t + 10s), Duration(30s));  // a 6s gap: its new pace
    EXPECT_EQ(w.on_heartbeat(t + 11s), Duration(30s));  // faster again: kept
}

}  // namespace
}  // namespace infervisor
