#include "policy/stat_files.h"

#include <gtest/gtest.h>

#include "cgroup/cgroup_stats.h"

namespace infervisor {
namespace {

TEST(StatFiles, ParsesCountersSkippingOddLines) {
    auto c = parse_counters("pswpin 12\npswpout 34\nweird line here\nnegative -1\n\nzswpin 5");
    EXPECT_EQ(find_counter(c, "pswpin"), 12u);
    EXPECT_EQ(find_counter(c, "pswpout"), 34u);
    EXPECT_EQ(find_counter(c, "zswpin"), 5u);
    EXPECT_FALSE(find_counter(c, "negative"));
    EXPECT_FALSE(find_counter(c, "weird"));
    EXPECT_FALSE(find_counter(c, "pswp"));
}

TEST(StatFiles, TheFirstWellFormedLineOfAKeyCountsAndOnlyWholeKeysMatch) {
    auto c = parse_counters("anon_thp 7\nanon x\nanon 5\nanon 9\nfile  3\nlast 4");
    EXPECT_EQ(find_counter(c, "anon"), 5u) << "not anon_thp; the malformed line skipped";
    EXPECT_EQ(find_counter(c, "file"), 3u) << "blanks around the value are trimmed";
    EXPECT_EQ(find_counter(c, "last"), 4u) << "no newline at the end";
    EXPECT_FALSE(find_counter(c, "anon 5")) << "a key has no blank";
    EXPECT_FALSE(find_counter(c, ""));
    EXPECT_FALSE(find_counter(parse_counters(""), "anon"));
}

TEST(StatFiles, ReadsCpuStatUsage) {
    auto c = parse_counters("usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\n");
    EXPECT_EQ(find_counter(c, "usage_usec"), 1500000u);
}

TEST(StatFiles, ParsesMeminfoInBytes) {
    auto m = parse_meminfo(
        "MemTotal:       24683652 kB\n"
        "MemFree:        24099472 kB\n"
        "MemAvailable:   24295352 kB\n"
        "HugePages_Total:       0\n"
        "SwapTotal:       1048572 kB\n"
        "SwapFree:         524288 kB\n");
    EXPECT_EQ(m.mem_total, 24683652ull * 1024);
    EXPECT_EQ(m.swap_total, 1048572ull * 1024);
    EXPECT_EQ(m.swap_free, 524288ull * 1024);
    EXPECT_EQ(m.mem_available, 24295352ull * 1024);
    EXPECT_FALSE(parse_meminfo("MemTotal: 1 kB\n").mem_available);
}

TEST(StatFiles, ReadsMemoryEvents) {
    auto e = memory_events_from(
        parse_counters("low 0\nhigh 12\nmax 3\noom 1\noom_kill 1\noom_group_kill 1\n"));
    EXPECT_EQ(e.high, 12u);
    EXPECT_EQ(e.max, 3u);
    EXPECT_EQ(e.oom, 1u);
    EXPECT_EQ(e.oom_kill, 1u);
    EXPECT_EQ(e.oom_group_kill, 1u);
    // Older kernels print no oom_group_kill: it reads as 0.
    EXPECT_EQ(memory_events_from(parse_counters("low 0\nhigh 1\n")).oom_group_kill, 0u);
}

}  // namespace
}  // namespace infervisor
