// The breaker against a host-memory kill loop, on a driven clock.
#include "supervise/host_kill_guard.h"

#include <gtest/gtest.h>

#include "support/fake_clock.h"

namespace infervisor {
namespace {

using namespace std::chrono_literals;

TEST(HostKillGuard, TheThirdKillWithinTheWindowTrips) {
    FakeClock clock;
    HostKillGuard guard(clock);
    EXPECT_FALSE(guard.record_kill());
    clock.advance(10min);
    EXPECT_FALSE(guard.record_kill());
    clock.advance(10min);
    EXPECT_TRUE(guard.record_kill());
    EXPECT_EQ(guard.recent_kills(), 3u);
}

TEST(HostKillGuard, KillsFurtherApartThanTheWindowNeverTrip) {
    FakeClock clock;
    HostKillGuard guard(clock);
    for (int i = 0; i < 10; ++i) {
        EXPECT_FALSE(guard.record_kill()) << "kill " << i;
        clock.advance(16min);  // two fit in 30 minutes, never three
    }
    EXPECT_EQ(guard.recent_kills(), 1u);  // the last one; 16 minutes old
}

TEST(HostKillGuard, TheWindowIsThirtyMinutesExactly) {
    FakeClock clock;
    HostKillGuard guard(clock);
    guard.record_kill();
    clock.advance(15min);
    guard.record_kill();
    clock.advance(15min);  // the first is 30 minutes old now: out
    EXPECT_FALSE(guard.record_kill());
    clock.advance(1min);
    EXPECT_TRUE(guard.record_kill());  // 16, 1 and 0 minutes old
}

TEST(HostKillGuard, AResetCountsAfresh) {
    FakeClock clock;
    HostKillGuard guard(clock);
    guard.record_kill();
    guard.record_kill();
    guard.reset();
    EXPECT_EQ(guard.recent_kills(), 0u);
    EXPECT_FALSE(guard.record_kill());
    EXPECT_FALSE(guard.record_kill());
    EXPECT_TRUE(guard.record_kill());
}

}  // namespace
}  // namespace infervisor
