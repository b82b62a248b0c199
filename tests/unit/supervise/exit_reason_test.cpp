// ExitReason: how a run's end is classified and described.
#include "supervise/exit_reason.h"

#include <gtest/gtest.h>
#include <signal.h>

namespace infervisor {
namespace {

ExitReason sigkilled(long long oom_kills, long long limit_ooms) {
    ExitReason r{ExitStatus::killed_by(SIGKILL)};
    r.oom_kills = oom_kills;
    r.limit_ooms = limit_ooms;
    return r;
}

TEST(ExitReason, AKillAtItsOwnMemoryMaxSaysSo) {
    ExitReason r = sigkilled(1, 1);
    EXPECT_TRUE(r.oom_killed());
    EXPECT_TRUE(r.oom_at_own_limit());
    EXPECT_EQ(r.describe(), "oom-killed (memory.max reached)");
    EXPECT_EQ(r.exit_class(), ExitClass::failure);
}

// memory.events counts kills by any OOM killer; without an `oom` event the
// cgroup never reached its own limit: the host (or a parent) ran out.
TEST(ExitReason, AHostWideOomKillIsNotBlamedOnTheCap) {
    ExitReason r = sigkilled(1, 0);
    EXPECT_TRUE(r.oom_killed());
    EXPECT_FALSE(r.oom_at_own_limit());
    EXPECT_EQ(r.describe(), "oom-killed by a host-wide OOM kill (memory.max not reached)");
}

TEST(ExitReason, AnOomKilledHelperDoesNotMakeACleanExitAnOomKill) {
    ExitReason r{ExitStatus::exited_with(0)};
    r.oom_kills = 1;
    r.limit_ooms = 1;
    EXPECT_FALSE(r.oom_killed());
    EXPECT_EQ(r.exit_class(), ExitClass::clean);
    EXPECT_EQ(r.describe(), ExitStatus::exited_with(0).describe());
}

TEST(ExitReason, APlainSigkillIsNotAnOomKill) {
    ExitReason r = sigkilled(0, 0);
    EXPECT_FALSE(r.oom_killed());
    EXPECT_EQ(r.describe(), ExitStatus::killed_by(SIGKILL).describe());
}

}  // namespace
}  // namespace infervisor
