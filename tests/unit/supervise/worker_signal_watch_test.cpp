// WorkerSignalWatch on the real kernel of this machine. Its cgroup2 has no
// memory controller, so memory.events cannot be shown here; cgroup.events is
// notified by the same kernfs_notify() path (cgroup_file_notify), so a watch
// on it proves the POLLPRI wake-up. memory.pressure exists on every cgroup2
// directory, so the PSI trigger negotiation is real (this host's root lacks
// CAP_SYS_RESOURCE: only 2 s windows are accepted).
#include "supervise/worker_signal_watch.h"

#include <gmock/gmock.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <vector>

#include "base/file_io.h"
#include "policy/busy_cgroup.h"
#include "support/temp_dir.h"

namespace infervisor::testing {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

const PsiTriggerSpec kTrigger{PsiLine::some, 150ms, 1s};
const SignalWatchFiles kCgroupEvents{"memory.pressure", "cgroup.events"};

class WorkerSignalWatchTest : public BusyCgroup {
  protected:
    void TearDown() override {
        if (sleeper_ > 0) {
            ::kill(sleeper_, SIGKILL);
            ::waitpid(sleeper_, nullptr, 0);
        }
        BusyCgroup::TearDown();
    }
    std::unique_ptr<WorkerSignalWatch> watch(const std::filesystem::path& dir,
                                             SignalWatchFiles files = kCgroupEvents) {
        return std::make_unique<WorkerSignalWatch>(
            io_, dir, kTrigger, [this](std::string_view file) { woken_.emplace_back(file); },
            files);
    }
    // A process moved into the cgroup: cgroup.events says "populated 1".
    void populate() {
        sleeper_ = ::fork();
        if (sleeper_ == 0) {
            ::pause();
            ::_exit(0);
        }
        ASSERT_TRUE(write_file(dir() / "cgroup.procs", std::to_string(sleeper_)).ok());
    }
    // Runs the loop until a wake-up; the bound is a hang guard only.
    void run_until_woken() {
        auto give_up = std::chrono::steady_clock::now() + 60s;
        while (woken_.empty() && std::chrono::steady_clock::now() < give_up) io_.run_one_for(50ms);
    }

    boost::asio::io_context io_;
    std::vector<std::string> woken_;
    pid_t sleeper_ = 0;
};

TEST_F(WorkerSignalWatchTest, AChangeOfTheEventsFileWakesIt) {
    auto w = watch(dir());
    EXPECT_TRUE(w->watches_events()) << w->description();
    EXPECT_THAT(w->description(), HasSubstr("cgroup.events watched"));
    io_.poll();  // a freshly opened file was read, so nothing is pending
    EXPECT_TRUE(woken_.empty());

    populate();
    run_until_woken();
    ASSERT_FALSE(woken_.empty());
    EXPECT_EQ(woken_.front(), "cgroup.events");

    // Re-armed: the next change wakes it again.
    woken_.clear();
    ASSERT_TRUE(write_file(dir() / "cgroup.freeze", "1").ok());
    run_until_woken();
    ASSERT_FALSE(woken_.empty());
    ASSERT_TRUE(write_file(dir() / "cgroup.freeze", "0").ok());
}

TEST_F(WorkerSignalWatchTest, NegotiatesAPressureTriggerAndSaysWhichOne) {
    auto w = watch(dir());
    if (!w->has_pressure_trigger()) {
        // A kernel without unprivileged triggers refuses us outright; say why.
        EXPECT_THAT(w->description(), HasSubstr("no memory.pressure trigger"));
        return;
    }
    // The request, or a fallback the kernel took instead (listed as refused).
    EXPECT_THAT(w->description(), HasSubstr("memory.pressure trigger 'some "));
    if (w->description().find("some 150000 1000000'") == std::string::npos) {
        EXPECT_THAT(w->description(), HasSubstr("kernel refused some 150000 1000000"));
    }
}

TEST_F(WorkerSignalWatchTest, NothingToWatchOutsideACgroupLeavesTheTick) {
    TempDir plain;
    auto w = watch(plain.path(), {});
    EXPECT_FALSE(w->has_pressure_trigger());
    EXPECT_FALSE(w->watches_events());
    EXPECT_THAT(w->description(), HasSubstr("no memory.pressure trigger"));
    EXPECT_THAT(w->description(), HasSubstr("no memory.events watch"));
    io_.poll();
    EXPECT_TRUE(woken_.empty());
}

TEST_F(WorkerSignalWatchTest, ADestroyedWatchWakesNobody) {
    auto w = watch(dir());
    w.reset();  // while its waits are pending
    populate();
    ::usleep(100'000);  // past cgroup_file_notify()'s 20 ms rate limit
    io_.poll();
    EXPECT_TRUE(woken_.empty());
}

}  // namespace
}  // namespace infervisor::testing
