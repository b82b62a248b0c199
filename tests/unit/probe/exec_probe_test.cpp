// The exec probe on this machine's real cgroup2 (below the test's own
// cgroup): real processes, real cgroup.kill. The caps are recorded instead
// of written, since our development hosts' cgroup2 has no memory
// controller; the VM scenario 122 runs it with the caps written.
#include "probe/exec_probe.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "cgroup/cgroup_discovery.h"

namespace infervisor {
namespace {

using ::testing::HasSubstr;

class ExecProbeTest : public ::testing::Test {
  protected:
    void SetUp() override {
        auto own = discover_own_cgroup("/proc");
        if (!own)
            GTEST_SKIP() << "no cgroup2 on this host (VM scenario 122 covers it): "
                         << own.error().message();
        static int counter = 0;
        parent_ = *own / ("infervisor-probe-test-" + std::to_string(getpid()) + "-" +
                          std::to_string(++counter));
        if (auto r = CgroupDir(parent_).create(); !r)
            GTEST_SKIP() << "cannot create a cgroup (root needed; VM scenario 122 covers it): "
                         << r.error().message();
    }

    void TearDown() override {
        if (parent_.empty()) return;
        CgroupDir probe = CgroupDir(parent_).child("w");
        if (probe.exists()) {
            (void)probe.kill();
            usleep(200000);
            (void)probe.remove();
        }
        (void)CgroupDir(parent_).remove();
    }

    ExecProbeSetup setup(std::vector<std::string> argv) {
        ExecProbeSetup s{SpawnRequest{}, CgroupDir(parent_).child("w"), CgroupLimits{}};
        s.request.argv = std::move(argv);
        s.request.environment = {"PATH=/usr/bin:/bin"};
        s.caps.memory_max = 64ull << 20;
        s.caps.pids_max = 8;
        s.write_caps = [this](const CgroupDir& dir, const CgroupLimits& caps) {
            written_[dir.name()] = caps;
            return Result<std::vector<std::string>>(std::vector<std::string>{});
        };
        return s;
    }

    ProbeOutcome run(ExecProbeSetup s, Duration timeout = std::chrono::seconds(60)) {
        std::optional<ProbeOutcome> outcome;
        auto attempt = start_exec_probe(io_, std::move(s), timeout, [&](ProbeOutcome o) {
            EXPECT_FALSE(outcome) << "done called twice";
            outcome = std::move(o);
        });
        EXPECT_FALSE(outcome) << "done called from within start";
        while (!outcome && io_.run_one_for(std::chrono::seconds(120))) {
        }
        EXPECT_TRUE(outcome);
        return outcome.value_or(ProbeOutcome{});
    }

    bool probe_cgroup_gone() const { return !CgroupDir(parent_).child("w").exists(); }

    boost::asio::io_context io_;
    std::filesystem::path parent_;
    std::map<std::string, CgroupLimits> written_;
};

TEST_F(ExecProbeTest, ExitZeroPassesAndTheCgroupGoes) {
    auto outcome = run(setup({"/bin/true"}));
    EXPECT_TRUE(outcome.passed) << outcome.detail;
    EXPECT_EQ(outcome.detail, "exited with code 0");
    EXPECT_TRUE(probe_cgroup_gone());
    ASSERT_EQ(written_.count("w"), 1u);
    EXPECT_EQ(*written_["w"].memory_max, 64ull << 20);
    EXPECT_EQ(*written_["w"].pids_max, 8);
}

TEST_F(ExecProbeTest, NonZeroExitFails) {
    auto outcome = run(setup({"/bin/sh", "-c", "exit 3"}));
    EXPECT_FALSE(outcome.passed);
    EXPECT_EQ(outcome.detail, "exited with code 3");
    EXPECT_TRUE(probe_cgroup_gone());
}

TEST_F(ExecProbeTest, AHangingCommandIsKilledAtItsTimeoutWithNothingLeft) {
    auto outcome =
        run(setup({"/bin/sh", "-c", "sleep 1000 & sleep 1000"}), std::chrono::milliseconds(300));
    EXPECT_FALSE(outcome.passed);
    EXPECT_EQ(outcome.detail, "no exit within 300ms; killed");
    EXPECT_TRUE(probe_cgroup_gone());  // removed only once empty: no process left
}

TEST_F(ExecProbeTest, WhatTheCommandLeftBehindIsKilled) {
    auto outcome = run(setup({"/bin/sh", "-c", "sleep 1000 & exit 0"}));
    EXPECT_TRUE(outcome.passed) << outcome.detail;
    EXPECT_TRUE(probe_cgroup_gone());
}

TEST_F(ExecProbeTest, AMissingProgramFailsWithTheReason) {
    auto outcome = run(setup({"/nonexistent/check"}));
    EXPECT_FALSE(outcome.passed);
    EXPECT_THAT(outcome.detail, HasSubstr("could not run"));
    EXPECT_THAT(outcome.detail, HasSubstr("/nonexistent/check"));
    EXPECT_TRUE(probe_cgroup_gone());
}

TEST_F(ExecProbeTest, CancelKillsReapsAndRemovesWithoutACallback) {
    bool called = false;
    auto attempt = start_exec_probe(io_, setup({"/bin/sleep", "1000"}), std::chrono::seconds(600),
                                    [&](ProbeOutcome) { called = true; });
    io_.poll();
    ASSERT_FALSE(CgroupDir(parent_).child("w").procs()->empty());
    attempt->cancel();
    attempt.reset();
    for (int i = 0; i < 1200 && !probe_cgroup_gone(); ++i)
        io_.run_one_for(std::chrono::milliseconds(100));
    EXPECT_TRUE(probe_cgroup_gone());
    EXPECT_FALSE(called);
}

}  // namespace
}  // namespace infervisor
