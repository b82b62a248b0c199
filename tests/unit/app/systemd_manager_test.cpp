#include "app/systemd_manager.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "support/temp_dir.h"

namespace infervisor {
namespace {

TEST(SystemdManager, TheUnitOfACgroupIsTheFirstComponentPastTheSlices) {
    EXPECT_EQ(*unit_of_cgroup("/system.slice/infervisord.service"), "infervisord.service");
    EXPECT_EQ(*unit_of_cgroup("/system.slice/infervisord.service/supervisor"),
              "infervisord.service");
    EXPECT_EQ(*unit_of_cgroup("/machine.slice/machine-a.slice/run-u7.scope"), "run-u7.scope");
    EXPECT_FALSE(unit_of_cgroup("/").ok());
    EXPECT_FALSE(unit_of_cgroup("/system.slice").ok());
    EXPECT_FALSE(unit_of_cgroup("/infervisor/supervisor").ok());
}

TEST(SystemdManager, OwnUnitComesFromTheCgroupV2LineOfProcSelf) {
    testing::TempDir procfs;
    procfs.write("self/cgroup",
                 "1:name=systemd:/x\n0::/system.slice/infervisord.service/supervisor\n");
    auto unit = own_systemd_unit(procfs.path());
    ASSERT_TRUE(unit.ok()) << unit.error().message();
    EXPECT_EQ(*unit, "infervisord.service");
    procfs.write("self/cgroup", "1:name=systemd:/x\n");
    EXPECT_FALSE(own_systemd_unit(procfs.path()).ok());
}

TEST(SystemdManager, ReadsTheHelpersAnswerAndRefusesAnIncompleteOne) {
    auto state =
        parse_unit_state("ActiveState=active\nControlGroup=/system.slice/w.service\nJobType=\n");
    ASSERT_TRUE(state.ok()) << state.error().message();
    EXPECT_EQ(state->active_state, "active");
    EXPECT_EQ(state->control_group, "/system.slice/w.service");
    EXPECT_EQ(state->job_type, "");
    EXPECT_FALSE(parse_unit_state("ActiveState=active\nJobType=stop\n").ok());
}

// The daemon runs the program and reads its three lines; a program that
// fails is an error that says what it printed.
TEST(SystemdManager, AsksThroughTheHelperProgram) {
    testing::TempDir dir;
    auto program = dir.write(
        "unit-state",
        "#!/bin/sh\n"
        "[ \"$1\" = infervisor-workers.service ] || { echo \"no unit $1\" >&2; exit 1; }\n"
        "echo ActiveState=active\n"
        "echo ControlGroup=/system.slice/infervisor-workers.service\n"
        "echo JobType=restart\n");
    ASSERT_EQ(::chmod(program.c_str(), 0755), 0);
    auto state = systemd_unit_state(program, "infervisor-workers.service");
    ASSERT_TRUE(state.ok()) << state.error().message();
    EXPECT_EQ(state->control_group, "/system.slice/infervisor-workers.service");
    EXPECT_EQ(state->job_type, "restart");
    auto missing = systemd_unit_state(program, "other.service");
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message().find("no unit other.service"), std::string::npos)
        << missing.error().message();
}

}  // namespace
}  // namespace infervisor
