#include "cgroup/cgroup_stats.h"

#include <gtest/gtest.h>

#include <cerrno>

#include "support/temp_dir.h"

namespace infervisor {
namespace {

using testing::TempDir;

TEST(StatParse, SingleValuesAreNumbersOrMax) {
    EXPECT_EQ(*parse_single_value("1234\n"), std::optional<uint64_t>(1234));
    EXPECT_EQ(*parse_single_value("max\n"), std::nullopt);
    EXPECT_EQ(*parse_single_value("0"), std::optional<uint64_t>(0));
    EXPECT_FALSE(parse_single_value("12x\n"));
    EXPECT_FALSE(parse_single_value("-1\n"));
    EXPECT_FALSE(parse_single_value(""));
    EXPECT_FALSE(parse_single_value("99999999999999999999999"));  // past uint64
}

TEST(CgroupStats, ReadsEachFileUnderAnInjectedRoot) {
    TempDir dir;
    dir.write("memory.current", "4096\n");
    dir.write("memory.max", "max\n");
    dir.write("memory.peak", "8192\n");
    dir.write("pids.current", "3\n");
    dir.write("memory.events", "low 0\nhigh 7\nmax 2\noom 1\noom_kill 1\n");
    dir.write("memory.pressure", "some avg10=1.50 avg60=0.00 avg300=0.00 total=10\n");
    CgroupStats stats{CgroupDir(dir.path())};
    EXPECT_EQ(*stats.memory_current(), std::optional<uint64_t>(4096));
    EXPECT_EQ(*stats.memory_max(), std::nullopt) << "'max' is no number";
    EXPECT_EQ(value_or_empty(stats.memory_peak()), 8192u);
    EXPECT_EQ(value_or_empty(stats.pids_current()), 3u);
    EXPECT_EQ(*stats.memory_events(), (MemoryEvents{0, 7, 2, 1, 1, 0}));
    EXPECT_DOUBLE_EQ(stats.memory_pressure()->some.avg10, 1.5);
}

TEST(CgroupStats, MissingFileIsEnoentAndMalformedNamesThePath) {
    TempDir dir;
    dir.write("memory.current", "lots\n");
    CgroupStats stats{CgroupDir(dir.path())};
    auto missing = stats.swap_current();
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().code, ENOENT);
    EXPECT_EQ(value_or_empty(missing), std::nullopt);
    auto malformed = stats.memory_current();
    ASSERT_FALSE(malformed);
    EXPECT_NE(malformed.error().message().find((dir.path() / "memory.current").string()),
              std::string::npos);
    EXPECT_NE(malformed.error().message().find("'lots'"), std::string::npos);
}

TEST(CgroupDir, ReadsProcsUpToTheCapAndSkipsJunk) {
    TempDir dir;
    dir.write("w/cgroup.procs", "12\n34\nx7\n-5\n56\n78\n");
    CgroupDir cgroup(dir.path() / "w");
    EXPECT_EQ(cgroup.procs_up_to(10), (std::vector<pid_t>{12, 34, 56, 78}));
    EXPECT_EQ(cgroup.procs_up_to(2), (std::vector<pid_t>{12, 34}));
    EXPECT_TRUE(CgroupDir(dir.path() / "missing").procs_up_to(10).empty());
}

}  // namespace
}  // namespace infervisor
