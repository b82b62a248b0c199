#include "process/exit_status.h"

#include <gtest/gtest.h>
#include <signal.h>

namespace infervisor {
namespace {

TEST(ExitStatus, DescribesHowAProcessEnded) {
    EXPECT_EQ(ExitStatus::exited_with(0).describe(), "exited with code 0");
    EXPECT_EQ(ExitStatus::exited_with(66).describe(), "exited with code 66");
    EXPECT_EQ(ExitStatus::killed_by(SIGKILL).describe(), "killed by SIGKILL");
    EXPECT_EQ(ExitStatus::killed_by(SIGABRT, true).describe(), "killed by SIGABRT (core dumped)");
}

TEST(ExitStatus, OnlyExitCodeZeroIsSuccess) {
    EXPECT_TRUE(ExitStatus::exited_with(0).success());
    EXPECT_FALSE(ExitStatus::exited_with(1).success());
    EXPECT_FALSE(ExitStatus::killed_by(SIGTERM).success());
}

TEST(ExitStatus, ComesFromWaitidSiginfo) {
    siginfo_t info = {};
    info.si_code = CLD_EXITED;
    info.si_status = 3;
    EXPECT_EQ(exit_status_from(info), ExitStatus::exited_with(3));
    info.si_code = CLD_KILLED;
    info.si_status = SIGTERM;
    EXPECT_EQ(exit_status_from(info), ExitStatus::killed_by(SIGTERM));
    info.si_code = CLD_DUMPED;
    info.si_status = SIGSEGV;
    EXPECT_EQ(exit_status_from(info), ExitStatus::killed_by(SIGSEGV, true));
}

}  // namespace
}  // namespace infervisor
