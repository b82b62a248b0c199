// The exec probe on this machine's real cgroup2 (below the test's own
// cgroup): real processes, real cgroup.kill. The test's cgroup plays the
// worker's: a "worker" process lives in it, and the probe's cgroup is a
// child of it, as CgroupTree::worker_probe lays it out.
#include "probe/exec_probe.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup/cgroup_discovery.h"
#include "support/temp_dir.h"

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
        CgroupDir worker(parent_);
        (void)worker.set_frozen(false);
        (void)worker.kill();  // the probe's cgroup and the "worker"
        if (worker_pid_ > 0) ::waitpid(worker_pid_, nullptr, 0);
        usleep(200000);
        if (CgroupDir probe = worker.child("w"); probe.exists()) (void)probe.remove();
        (void)worker.remove();
    }

    // A process in the "worker's" cgroup, so that the probe's cgroup is a
    // child of a cgroup with processes, as in the daemon.
    void start_worker() {
        worker_pid_ = ::fork();
        if (worker_pid_ == 0) {
            ::execl("/bin/sleep", "sleep", "1000", nullptr);
            ::_exit(127);
        }
        ASSERT_GT(worker_pid_, 0);
        ASSERT_TRUE(CgroupDir(parent_).move_process(worker_pid_).ok());
    }
    bool worker_alive() const { return worker_pid_ > 0 && ::kill(worker_pid_, 0) == 0; }

    ExecProbeSetup setup(std::vector<std::string> argv) {
        ExecProbeSetup s{SpawnRequest{}, CgroupDir(parent_).child("w")};
        s.request.argv = std::move(argv);
        s.request.environment = {"PATH=/usr/bin:/bin"};
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
    pid_t worker_pid_ = -1;
};

TEST_F(ExecProbeTest, ExitZeroPassesAndTheCgroupGoes) {
    auto outcome = run(setup({"/bin/true"}));
    EXPECT_TRUE(outcome.passed) << outcome.detail;
    EXPECT_EQ(outcome.detail, "exited with code 0");
    EXPECT_TRUE(probe_cgroup_gone());
}

// Born inside the worker's cgroup (in the probe's child of it), beside the
// worker's own processes, whatever the probe does there is the worker's.
TEST_F(ExecProbeTest, RunsInAChildOfTheWorkersCgroupBesideItsProcesses) {
    start_worker();
    testing::TempDir out;
    const std::string seen = (out.path() / "cgroup").string();
    auto outcome = run(setup({"/bin/sh", "-c", "grep '^0::' /proc/self/cgroup > " + seen}));
    EXPECT_TRUE(outcome.passed) << outcome.detail;
    std::string line = testing::slurp(seen);
    EXPECT_TRUE(line.starts_with("0::/")) << line;
    EXPECT_TRUE(line.ends_with("/" + parent_.filename().string() + "/w\n")) << line;
    EXPECT_TRUE(probe_cgroup_gone());
    EXPECT_TRUE(worker_alive()) << "the probe's kill reached the worker";
}

// A frozen worker (a suspension's or a policy's freeze) would freeze the
// probe before its execve, and the spawn waits for that execve on the loop:
// the attempt fails at once, spawning nothing, and the worker stays as it
// was.
TEST_F(ExecProbeTest, AFrozenWorkerIsNotProbedAndNothingWaitsForIt) {
    start_worker();
    CgroupDir worker(parent_);
    ASSERT_TRUE(worker.set_frozen(true).ok());
    auto outcome = run(setup({"/bin/true"}));
    EXPECT_FALSE(outcome.passed);
    EXPECT_EQ(outcome.detail, "could not run: the worker is frozen");
    EXPECT_TRUE(probe_cgroup_gone());
    EXPECT_TRUE(worker_alive());
    EXPECT_TRUE(worker.freeze_requested().value_or(false));
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
