// WorkDirMonitor on the real kernel: real deletions by real processes, a
// real usage measurement on the background thread.
#include "supervise/workdir_monitor.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <future>

#include "base/file_io.h"
#include "support/temp_dir.h"
#include "workdir/deleting_process.h"
#include "workdir_test_support.h"

namespace infervisor {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// A process that deletes `path` and then stays alive until killed, so that
// it can still be looked up when the event is read.
class LingeringDeleter {
  public:
    explicit LingeringDeleter(const fs::path& path) {
        int ready[2];
        EXPECT_EQ(::pipe(ready), 0);
        pid_ = ::fork();
        if (pid_ == 0) {
            ::close(ready[0]);
            bool ok = ::unlink(path.c_str()) == 0;
            (void)!::write(ready[1], ok ? "y" : "n", 1);
            ::pause();
            ::_exit(0);
        }
        ::close(ready[1]);
        char c = 0;
        EXPECT_EQ(::read(ready[0], &c, 1), 1);
        EXPECT_EQ(c, 'y');
        ::close(ready[0]);
    }
    ~LingeringDeleter() {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
    }
    pid_t pid() const { return pid_; }

  private:
    pid_t pid_ = 0;
};

std::string own_cgroup() { return look_up_process("/proc", ::getpid()).cgroup; }

struct MonitorFixture : ::testing::Test {
    TempDir root;
    Paths paths{.state_dir = root.path() / "state", .tmpfiles_dir = root.path() / "tmpfiles.d"};
    boost::asio::io_context io;
    CgroupTree tree{root.path() / "cgroup"};
    EventBus bus;
    WorkDirManager manager{paths};
    SteadyClock clock{io};
    WorkerContext ctx{io, tree, root.path() / "cgroup", paths, bus, manager, clock};
    BackgroundWork background{io};
    WorkDirMonitor::WorkerView view{true, "/elsewhere/workers/llama"};
    WorkDirMonitor monitor{ctx, background, [this](const std::string&) { return view; }};
    std::vector<Event> events;
    fs::path cache = root.path() / "cache";

    void SetUp() override {
        if (!testing::running_as_root()) GTEST_SKIP() << "needs root";
        bus.subscribe([this](const Event& e) { events.push_back(e); });
        WorkDirSpec spec{
            .worker = "llama", .extra_dirs = {{cache, 0700, true}}, .quota = 64 * 1024};
        ASSERT_TRUE(manager.prepare(spec, 0, 0).ok());
        monitor.start(std::chrono::hours(1));
    }

    // Runs the loop until an event of `kind` came (hang guard: 60 s).
    const Event* wait_for(EventKind kind) {
        for (int i = 0; i < 600; ++i) {
            for (const auto& e : events)
                if (e.kind == kind) return &e;
            io.run_for(std::chrono::milliseconds(100));
        }
        return nullptr;
    }
    size_t count(EventKind kind) const {
        size_t n = 0;
        for (const auto& e : events) n += e.kind == kind;
        return n;
    }
    static std::string field(const Event& e, const std::string& key) {
        for (const auto& [k, v] : e.fields)
            if (k == key) return v;
        return "";
    }
};

TEST_F(MonitorFixture, ADeletionByAnotherProcessIsLoggedWithItsPid) {
    if (!monitor.identifies_deleters("llama")) GTEST_SKIP() << "no fanotify here";
    root.write("cache/model.bin", "weights");
    LingeringDeleter deleter(cache / "model.bin");
    const Event* e = wait_for(EventKind::protected_entry_deleted);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->worker, "llama");
    EXPECT_EQ(field(*e, "DELETER"), "other");
    EXPECT_EQ(field(*e, "DELETER_PID"), std::to_string(deleter.pid()));
    EXPECT_EQ(field(*e, "PATH"), (cache / "model.bin").string());
    EXPECT_EQ(field(*e, "DELETER_CGROUP"), own_cgroup());
    EXPECT_NE(e->message.find("pid " + std::to_string(deleter.pid())), std::string::npos)
        << e->message;
}

TEST_F(MonitorFixture, TheWorkersOwnDeletionsAreNotLogged) {
    if (!monitor.identifies_deleters("llama")) GTEST_SKIP() << "no fanotify here";
    view.cgroup = own_cgroup();  // the deleter is in the "worker's" cgroup
    root.write("cache/own", "x");
    root.write("cache/theirs", "x");
    {
        LingeringDeleter own(cache / "own");
        monitor.drain_deletions();
    }
    EXPECT_EQ(count(EventKind::protected_entry_deleted), 0u);
    view.cgroup = "/elsewhere/workers/llama";
    LingeringDeleter theirs(cache / "theirs");
    const Event* e = wait_for(EventKind::protected_entry_deleted);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(field(*e, "ENTRY"), "theirs");
    EXPECT_EQ(count(EventKind::protected_entry_deleted), 1u);
}

TEST_F(MonitorFixture, ManyDeletionsAreRateLimited) {
    for (int i = 0; i < 50; ++i) root.write("cache/f" + std::to_string(i), "x");
    ASSERT_EQ(testing::run_program({"/usr/bin/find", cache.string(), "-mindepth", "1", "-delete"})
                  .exit_status,
              0);
    io.run_for(std::chrono::milliseconds(500));
    monitor.drain_deletions();
    EXPECT_EQ(count(EventKind::protected_entry_deleted), kDeletionLogBurst);
}

TEST_F(MonitorFixture, UsageOverTheQuotaWarnsOnceAndFillsTheSample) {
    std::ofstream(paths.state_dir / "workers/llama/big") << std::string(1 << 20, 'x');
    monitor.scan_now();
    const Event* e = wait_for(EventKind::workdir_over_quota);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(field(*e, "QUOTA_BYTES"), "65536");
    auto usage = monitor.usage("llama");
    ASSERT_TRUE(usage.has_value());
    EXPECT_GE(usage->bytes, 1u << 20);
    WorkerSample sample;
    monitor.fill_sample("llama", sample);
    EXPECT_EQ(sample.workdir_usage, usage->bytes);
    EXPECT_EQ(sample.workdir_quota, 64u * 1024);

    auto before = usage->measured_at;
    monitor.scan_now();
    for (int i = 0; i < 600 && monitor.usage("llama")->measured_at == before; ++i)
        io.run_for(std::chrono::milliseconds(100));
    EXPECT_EQ(count(EventKind::workdir_over_quota), 1u);  // once per crossing
}

// A tree too big to measure whole: its lower bound is the usage, and one
// usage-capped event says so, not one per scan.
TEST_F(MonitorFixture, AMeasurementThatReachesACapIsJournaledOnce) {
    monitor.set_usage_limits(UsageLimits{.max_entries = 5});
    for (int i = 0; i < 20; ++i)
        std::ofstream(paths.state_dir / "workers/llama" / ("f" + std::to_string(i))) << "x";
    monitor.scan_now();
    const Event* e = wait_for(EventKind::usage_capped);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(field(*e, "USAGE_CAPPED_BY"), "more than 5 entries");
    EXPECT_EQ(field(*e, "USAGE_ENTRIES"), "5");
    auto usage = monitor.usage("llama");
    ASSERT_TRUE(usage.has_value());
    EXPECT_FALSE(usage->exact);

    auto before = usage->measured_at;
    monitor.scan_now();
    for (int i = 0; i < 600 && monitor.usage("llama")->measured_at == before; ++i)
        io.run_for(std::chrono::milliseconds(100));
    ASSERT_NE(monitor.usage("llama")->measured_at, before);
    EXPECT_EQ(count(EventKind::usage_capped), 1u);
}

TEST_F(MonitorFixture, AMeasurementOfAReleasedDirDoesNotLandOnItsSuccessor) {
    // Hold the background thread, so that the measurement stays in flight
    // while the worker is released and prepared again with a larger quota.
    std::promise<void> gate;
    background.run<int>(
        [held = gate.get_future().share()] {
            held.wait();
            return 0;
        },
        [](int) {});
    std::ofstream(paths.state_dir / "workers/llama/big") << std::string(1 << 20, 'x');
    monitor.scan_now();
    ASSERT_TRUE(manager.release("llama").ok());
    WorkDirSpec larger{.worker = "llama", .extra_dirs = {{cache, 0700, true}}, .quota = 64 << 20};
    ASSERT_TRUE(manager.prepare(larger, 0, 0).ok());
    gate.set_value();
    // Jobs run in order and their results are posted in order: once this
    // one's is in, the stale measurement's has been handled.
    bool drained = false;
    background.run<int>([] { return 0; }, [&](int) { drained = true; });
    while (!drained) io.run_one();
    EXPECT_FALSE(monitor.usage("llama").has_value()) << "the old dir's figure landed";
    EXPECT_EQ(count(EventKind::workdir_over_quota), 0u) << "judged against the old quota";

    // The next scan measures the dir as it is now, against its new quota.
    monitor.scan_now();
    for (int i = 0; i < 600 && !monitor.usage("llama"); ++i)
        io.run_for(std::chrono::milliseconds(100));
    ASSERT_TRUE(monitor.usage("llama").has_value());
    EXPECT_EQ(monitor.usage("llama")->quota, ByteLimit(64u << 20));
    EXPECT_EQ(count(EventKind::workdir_over_quota), 0u);
}

TEST_F(MonitorFixture, ReleasedWorkersAreForgotten) {
    ASSERT_TRUE(manager.release("llama").ok());
    EXPECT_FALSE(monitor.identifies_deleters("llama"));
    EXPECT_FALSE(monitor.usage("llama").has_value());
    root.write("cache/after", "x");
    LingeringDeleter deleter(cache / "after");
    io.run_for(std::chrono::milliseconds(300));
    monitor.drain_deletions();
    EXPECT_EQ(count(EventKind::protected_entry_deleted), 0u);
}

}  // namespace
}  // namespace infervisor
