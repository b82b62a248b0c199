// Memory reclaim on cgroupfs stand-ins: which method is chosen, what is
// written, and where it stops. A fixture's memory.current never drops, so
// every run here ends at its first step as "nothing more could go"; the
// reclaim itself (pages really pushed to swap) is checked on a real kernel
// in the VM (tests/vm/scenarios/19*-suspend-*.sh).
#include "cgroup/memory_reclaim.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/byte_units.h"
#include "support/temp_dir.h"

namespace infervisor {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

TEST(MemoryReclaim, WritesMemoryReclaimInStepsWhereTheKernelHasIt) {
    testing::TempDir fs;
    fs.write("w/memory.current", std::to_string(300 * MiB) + "\n");
    fs.write("w/memory.reclaim", "");
    fs.write("w/memory.high", "max\n");
    auto r = reclaim_memory(CgroupDir(fs.path() / "w"), 1min, 64 * MiB);
    EXPECT_EQ(r.method, ReclaimMethod::memory_reclaim);
    EXPECT_EQ(testing::slurp(fs.path() / "w/memory.reclaim"), std::to_string(64 * MiB));
    EXPECT_EQ(testing::slurp(fs.path() / "w/memory.high"), "max\n");  // untouched
    EXPECT_EQ(r.steps, 1);
    EXPECT_TRUE(r.complete);  // the step freed nothing: no more to gain
    EXPECT_EQ(r.memory_before, 300 * MiB);
    EXPECT_EQ(r.memory_after, 300 * MiB);
    EXPECT_EQ(r.bytes_reclaimed(), 0u);
    EXPECT_FALSE(r.memory_high_before);
    EXPECT_EQ(r.error, "");
}

TEST(MemoryReclaim, LowersMemoryHighOnOlderKernelsAndSaysWhatItWas) {
    testing::TempDir fs;
    fs.write("w/memory.current", std::to_string(100 * MiB) + "\n");
    fs.write("w/memory.high", std::to_string(512 * MiB) + "\n");
    auto r = reclaim_memory(CgroupDir(fs.path() / "w"), 1min, 64 * MiB);
    EXPECT_EQ(r.method, ReclaimMethod::memory_high);
    EXPECT_EQ(r.memory_high_before, std::to_string(512 * MiB));
    // memory.current less one step.
    EXPECT_THAT(testing::slurp(fs.path() / "w/memory.high"),
                ::testing::StartsWith(std::to_string(36 * MiB)));
    EXPECT_EQ(r.steps, 1);
}

TEST(MemoryReclaim, AStepNeverAsksForMoreThanTheCgroupHolds) {
    testing::TempDir fs;
    fs.write("w/memory.current", "4096\n");
    fs.write("w/memory.reclaim", "");
    auto r = reclaim_memory(CgroupDir(fs.path() / "w"), 1min, 64 * MiB);
    EXPECT_EQ(testing::slurp(fs.path() / "w/memory.reclaim"), "4096");
    EXPECT_EQ(r.steps, 1);
}

TEST(MemoryReclaim, AnEmptyCgroupNeedsNoStep) {
    testing::TempDir fs;
    fs.write("w/memory.current", "0\n");
    fs.write("w/memory.reclaim", "");
    auto r = reclaim_memory(CgroupDir(fs.path() / "w"), 1min);
    EXPECT_EQ(r.steps, 0);
    EXPECT_TRUE(r.complete);
}

TEST(MemoryReclaim, StopsAtTheDeadlineBeforeAnyStepWhenItHasPassed) {
    testing::TempDir fs;
    fs.write("w/memory.current", std::to_string(100 * MiB) + "\n");
    fs.write("w/memory.reclaim", "");
    auto r = reclaim_memory(CgroupDir(fs.path() / "w"), 0ms);
    EXPECT_EQ(r.steps, 0);
    EXPECT_FALSE(r.complete);
    EXPECT_THAT(r.error, HasSubstr("deadline"));
    EXPECT_EQ(testing::slurp(fs.path() / "w/memory.reclaim"), "");
}

TEST(MemoryReclaim, WithoutAMemoryControllerDoesNothingAndSaysWhy) {
    testing::TempDir fs;
    fs.write("w/cgroup.procs", "");
    auto r = reclaim_memory(CgroupDir(fs.path() / "w"), 1min);
    EXPECT_EQ(r.method, ReclaimMethod::none);
    EXPECT_EQ(r.steps, 0);
    EXPECT_THAT(r.error, HasSubstr("no memory controller"));
    EXPECT_EQ(to_string(r.method), "none");
}

TEST(MemoryReclaim, AFailedWriteStopsWithItsError) {
    testing::TempDir fs;
    fs.write("w/memory.current", std::to_string(100 * MiB) + "\n");
    fs.mkdir("w/memory.reclaim");  // not writable as a file: open fails with EISDIR
    auto r = reclaim_memory(CgroupDir(fs.path() / "w"), 1min);
    EXPECT_EQ(r.method, ReclaimMethod::memory_reclaim);
    EXPECT_EQ(r.steps, 1);
    EXPECT_FALSE(r.complete);
    EXPECT_THAT(r.error, HasSubstr("memory.reclaim"));
}

}  // namespace
}  // namespace infervisor
