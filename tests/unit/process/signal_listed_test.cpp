// signal_listed (process/pidfd.h). Issue 26, defect 10: a non-SIGKILL
// `infervisorctl kill` read cgroup.procs, then kill(2)ed each pid: a pid
// freed and reused in between got root's signal.
#include <gtest/gtest.h>
#include <signal.h>

#include "process/pidfd.h"
#include "process/spawn.h"

namespace infervisor {
namespace {

SpawnedProcess sleeper() {
    SpawnRequest request;
    request.argv = {"/bin/sleep", "1000"};
    auto spawned = spawn_process(request);
    EXPECT_TRUE(spawned.ok()) << spawned.error().message();
    return std::move(*spawned);
}

bool still_running(const SpawnedProcess& p) {
    auto status = reap(p.pidfd.get());
    return status.ok() && !status->has_value();
}

TEST(SignalListed, OnlyWhatTheSecondListingStillNamesIsSignalled) {
    auto worker = sleeper();
    auto innocent = sleeper();  // stands for a process that got a reused pid
    int calls = 0;
    auto list = [&]() -> Result<std::vector<pid_t>> {
        // First: the worker, a pid about to be reused, and pids that mean
        // "my process group" and "everyone" to kill(2). Then: the worker only.
        if (++calls == 1) return std::vector<pid_t>{worker.pid, innocent.pid, 0, -1};
        return std::vector<pid_t>{worker.pid};
    };
    auto sent = signal_listed(list, SIGTERM);
    ASSERT_TRUE(sent.ok()) << sent.error().message();
    EXPECT_EQ(*sent, 1u);
    EXPECT_EQ(calls, 2);
    auto status = wait_for_exit(worker.pidfd.get());
    ASSERT_TRUE(status.ok());
    EXPECT_EQ(*status, ExitStatus::killed_by(SIGTERM));
    EXPECT_TRUE(still_running(innocent));
    (void)send_signal(innocent.pidfd.get(), SIGKILL);
    (void)wait_for_exit(innocent.pidfd.get());
}

TEST(SignalListed, AProcessGoneBeforeItsPidfdIsNotAnError) {
    auto gone = sleeper();
    pid_t pid = gone.pid;
    (void)send_signal(gone.pidfd.get(), SIGKILL);
    (void)wait_for_exit(gone.pidfd.get());  // reaped: pidfd_open fails (ESRCH)
    int calls = 0;
    // Listed first, not after (so even a reuse of the pid meanwhile gets nothing).
    auto sent = signal_listed(
        [&]() -> Result<std::vector<pid_t>> {
            return ++calls == 1 ? std::vector<pid_t>{pid} : std::vector<pid_t>{};
        },
        SIGTERM);
    ASSERT_TRUE(sent.ok());
    EXPECT_EQ(*sent, 0u);
}

}  // namespace
}  // namespace infervisor
