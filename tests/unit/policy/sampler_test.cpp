#include "policy/sampler.h"

#include <gtest/gtest.h>

#include <set>

#include "busy_cgroup.h"
#include "policy/policy_engine.h"
#include "policy/rule_config.h"
#include "support/temp_dir.h"

namespace infervisor {
namespace {

using testing::BusyCgroup;

constexpr const char* kPsi =
    "some avg10=42.00 avg60=10.00 avg300=2.00 total=100\n"
    "full avg10=21.00 avg60=5.00 avg300=1.00 total=50\n";

void write_worker_cgroup(const testing::TempDir& dir) {
    dir.write("w/memory.current", "536870912\n");
    dir.write("w/memory.max", "1073741824\n");
    dir.write("w/memory.high", "max\n");
    dir.write("w/memory.swap.current", "4096\n");
    dir.write("w/memory.swap.max", "0\n");
    dir.write("w/memory.pressure", kPsi);
    dir.write("w/cpu.pressure", "some avg10=1.00 avg60=1.00 avg300=1.00 total=1\n");
    dir.write("w/io.pressure", kPsi);
    dir.write("w/memory.events", "low 0\nhigh 7\nmax 2\noom 1\noom_kill 1\noom_group_kill 0\n");
    dir.write("w/cpu.stat", "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n");
    dir.write("w/memory.stat", "anon 100\nworkingset_refault_anon 17\nzswpin 3\n");
}

TEST(Sampler, ReadsAWholeWorkerCgroup) {
    testing::TempDir dir;
    write_worker_cgroup(dir);
    TimePoint now{std::chrono::hours(5)};
    WorkerSample s = sample_worker(dir.path() / "w", now);
    EXPECT_EQ(s.time, now);
    EXPECT_EQ(s.memory_current, 536870912u);
    EXPECT_EQ(s.memory_max, 1073741824u);
    EXPECT_FALSE(s.memory_high) << "'max' is no finite limit";
    EXPECT_EQ(s.swap_current, 4096u);
    EXPECT_EQ(s.swap_max, 0u);
    ASSERT_TRUE(s.memory_pressure);
    EXPECT_DOUBLE_EQ(s.memory_pressure->some.avg10, 42.0);
    ASSERT_TRUE(s.cpu_pressure);
    EXPECT_FALSE(s.cpu_pressure->full);
    ASSERT_TRUE(s.memory_events);
    EXPECT_EQ(s.memory_events->high, 7u);
    EXPECT_EQ(s.memory_events->oom_kill, 1u);
    EXPECT_EQ(s.cpu_usage_usec, 2500000u);
    EXPECT_EQ(s.swapin_pages, 17u) << "no pswpin: falls back to workingset_refault_anon";
    EXPECT_FALSE(s.swapout_pages);
    EXPECT_EQ(s.memory_anon, 100u) << "memory.stat anon";
    EXPECT_TRUE(s.read_errors.empty());
    EXPECT_FALSE(s.started_at) << "the supervisor's fields are the caller's";
}

TEST(Sampler, PrefersPswpinWhereTheKernelHasIt) {
    testing::TempDir dir;
    dir.write("w/memory.stat", "pswpin 40\npswpout 50\nworkingset_refault_anon 17\n");
    WorkerSample s = sample_worker(dir.path() / "w", TimePoint{});
    EXPECT_EQ(s.swapin_pages, 40u);
    EXPECT_EQ(s.swapout_pages, 50u);
}

TEST(Sampler, MissingFilesLeaveFieldsEmptyWithoutErrors) {
    testing::TempDir dir;
    dir.write("w/cpu.stat", "usage_usec 10\n");
    WorkerSample s = sample_worker(dir.path() / "w", TimePoint{});
    EXPECT_EQ(s.cpu_usage_usec, 10u);
    EXPECT_FALSE(s.memory_current);
    EXPECT_FALSE(s.memory_pressure);
    EXPECT_FALSE(s.memory_events);
    EXPECT_TRUE(s.read_errors.empty());
}

TEST(Sampler, MalformedFilesAreListedAndTheRestIsRead) {
    testing::TempDir dir;
    dir.write("w/memory.current", "lots\n");
    dir.write("w/memory.pressure", "nonsense\n");
    dir.write("w/cpu.stat", "usage_usec 10\n");
    WorkerSample s = sample_worker(dir.path() / "w", TimePoint{});
    EXPECT_FALSE(s.memory_current);
    EXPECT_FALSE(s.memory_pressure);
    EXPECT_EQ(s.cpu_usage_usec, 10u);
    ASSERT_EQ(s.read_errors.size(), 2u);
    EXPECT_NE(s.read_errors[0].find("memory.current"), std::string::npos);
    EXPECT_NE(s.read_errors[1].find("memory.pressure"), std::string::npos);
}

TEST(Sampler, ReadsAHostFromProcfsFixture) {
    testing::TempDir dir;
    dir.write("proc/pressure/memory", kPsi);
    dir.write("proc/pressure/cpu", kPsi);
    dir.write("proc/vmstat", "nr_free_pages 1\npswpin 100\npswpout 200\n");
    dir.write("proc/meminfo", "MemTotal: 1000 kB\nMemAvailable: 250 kB\n");
    HostSample s = sample_host(dir.path() / "proc", TimePoint{});
    ASSERT_TRUE(s.memory_pressure);
    EXPECT_DOUBLE_EQ(s.memory_pressure->full->avg10, 21.0);
    EXPECT_FALSE(s.io_pressure);
    EXPECT_EQ(s.pswpin, 100u);
    EXPECT_EQ(s.pswpout, 200u);
    EXPECT_EQ(s.mem_total, 1024000u);
    EXPECT_EQ(s.mem_available, 256000u);
    EXPECT_FALSE(s.swap_total) << "not in this meminfo";
    EXPECT_TRUE(s.read_errors.empty());

    dir.write("proc/meminfo",
              "MemTotal: 1000 kB\nMemAvailable: 250 kB\nSwapTotal: 400 kB\nSwapFree: 100 kB\n");
    s = sample_host(dir.path() / "proc", TimePoint{});
    EXPECT_EQ(s.swap_total, 409600u);
    EXPECT_EQ(s.swap_free, 102400u);
}

TEST(Sampler, ReadsThisHost) {
    HostSample s = sample_host("/proc", TimePoint{});
    EXPECT_TRUE(s.read_errors.empty()) << s.read_errors.front();
    ASSERT_TRUE(s.mem_total);
    ASSERT_TRUE(s.mem_available);
    EXPECT_LE(*s.mem_available, *s.mem_total);
    EXPECT_TRUE(s.pswpin);
    if (std::filesystem::exists("/proc/pressure")) {
        EXPECT_TRUE(s.memory_pressure);
    }
}

// The real cgroup2 hierarchy here has no memory controller: memory fields are
// absent, the rest is read, nothing counts as an error.
TEST(Sampler, ReadsARealCgroup2Directory) {
    const std::filesystem::path root = "/sys/fs/cgroup/unified";
    if (!std::filesystem::exists(root / "cgroup.procs")) GTEST_SKIP() << "no cgroup2 at " << root;
    WorkerSample s = sample_worker(root, TimePoint{});
    EXPECT_TRUE(s.read_errors.empty()) << s.read_errors.front();
    EXPECT_TRUE(s.cpu_usage_usec);
    if (std::filesystem::exists(root / "cpu.pressure")) {
        EXPECT_TRUE(s.cpu_pressure);
    }
    if (!std::filesystem::exists(root / "memory.current")) {
        EXPECT_FALSE(s.memory_current);
    }
}

// End to end on the real kernel: samples of a busy cgroup, read by
// sample_worker(), make the engine fire on CPU usage and on CPU pressure.
TEST_F(BusyCgroup, RealSamplesFeedTheEngine) {
    ConfigErrors errors;
    auto rules = parse_rules(YAML::Load(R"(
- {name: busy, when: cpu.usage > 1%, action: log}
- {name: queued, when: cpu.pressure.some.avg10 > 1%, action: log})"),
                             errors);
    ASSERT_TRUE(errors.empty()) << errors.format();
    PolicyEngine engine(PolicyOptions{.rate_interval = Duration(100)});
    engine.set_default_rules(rules);
    spin_inside(busy_count());
    std::chrono::steady_clock clock;  // real samples, real time
    std::set<std::string> fired;
    // Bounded only so that a broken kernel cannot hang the test.
    for (int i = 0; i < 300 && fired.size() < 2; ++i) {
        TimePoint now = clock.now();
        WorkerSample sample = sample_worker(dir(), now);
        ASSERT_TRUE(sample.read_errors.empty()) << sample.read_errors.front();
        for (const auto& d : engine.evaluate("busy", sample, now)) fired.insert(d.rule);
        ::usleep(200'000);
    }
    EXPECT_EQ(fired, (std::set<std::string>{"busy", "queued"}));
}

}  // namespace
}  // namespace infervisor
