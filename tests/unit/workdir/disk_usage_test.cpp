#include "workdir/disk_usage.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "support/byte_units.h"
#include "support/temp_dir.h"
#include "workdir_test_support.h"

namespace infervisor {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

uint64_t usage_of(const fs::path& dir) {
    auto usage = measure_usage(testing::open_dir(dir).get());
    EXPECT_TRUE(usage.ok()) << usage.error().message();
    EXPECT_TRUE(usage.ok() && usage->exact());
    return usage.ok() ? usage->bytes : 0;
}

TEST(DiskUsage, CountsAllocatedBytesOfTheWholeTree) {
    TempDir dir;
    uint64_t empty = usage_of(dir.path());
    dir.write("a/b/c/weights.bin", std::string(MiB, 'w'));
    dir.write("top.bin", std::string(MiB, 't'));
    uint64_t full = usage_of(dir.path());
    EXPECT_GE(full - empty, 2 * MiB);
    EXPECT_LT(full - empty, 3 * MiB);
}

TEST(DiskUsage, SparseFilesCountWhatTheyOccupy) {
    TempDir dir;
    uint64_t empty = usage_of(dir.path());
    ASSERT_EQ(::truncate(dir.write("sparse", "").c_str(), 1024 * MiB), 0);
    EXPECT_LT(usage_of(dir.path()) - empty, MiB);
}

TEST(DiskUsage, CountsAHardLinkedFileOnce) {
    TempDir dir;
    auto file = dir.write("model", std::string(MiB, 'm'));
    uint64_t once = usage_of(dir.path());
    fs::create_hard_link(file, dir.path() / "model.link");
    EXPECT_EQ(usage_of(dir.path()), once);
}

TEST(DiskUsage, DoesNotFollowSymlinks) {
    TempDir dir, outside;
    outside.write("big", std::string(4 * MiB, 'b'));
    uint64_t before = usage_of(dir.path());
    fs::create_symlink(outside.path() / "big", dir.path() / "big");
    fs::create_symlink(outside.path(), dir.path() / "outside");
    EXPECT_LT(usage_of(dir.path()) - before, MiB);
}

TEST(DiskUsage, WorksFromAnOPathDescriptor) {
    TempDir dir;
    dir.write("f", std::string(MiB, 'f'));
    UniqueFd fd(::open(dir.path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    auto usage = measure_usage(fd.get());
    ASSERT_TRUE(usage.ok());
    EXPECT_EQ(usage->bytes, usage_of(dir.path()));
}

// Deeper than the descriptors it may hold: what lies below the cap is not
// counted, and the figure says it is a lower bound (it used to fail, which
// left a quota unchecked).
TEST(DiskUsage, ATreeTooDeepToWalkGivesALowerBound) {
    TempDir dir;
    fs::path deep = dir.path();
    for (int i = 0; i <= kMaxUsageDepth + 1; ++i) deep /= "d";
    fs::create_directories(deep);
    dir.write("seen", std::string(MiB, 's'));
    auto usage = measure_usage(testing::open_dir(dir.path()).get());
    ASSERT_TRUE(usage.ok()) << usage.error().message();
    EXPECT_FALSE(usage->exact());
    EXPECT_TRUE(usage->capped.depth);
    EXPECT_FALSE(usage->capped.entries);
    EXPECT_GE(usage->bytes, MiB);
    EXPECT_EQ(usage->capped_by(UsageLimits{}), "deeper than 256 levels");
    std::ofstream(deep / "hidden") << std::string(MiB, 'h');
    auto again = measure_usage(testing::open_dir(dir.path()).get());
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->bytes, usage->bytes);  // below the cap: not seen
}

TEST(DiskUsage, StopsAtItsEntryCapWithALowerBound) {
    TempDir dir;
    for (int i = 0; i < 50; ++i) dir.write("f" + std::to_string(i), std::string(64 * 1024, 'f'));
    uint64_t whole = usage_of(dir.path());
    auto usage = measure_usage(testing::open_dir(dir.path()).get(), UsageLimits{.max_entries = 10});
    ASSERT_TRUE(usage.ok());
    EXPECT_TRUE(usage->capped.entries);
    EXPECT_EQ(usage->entries, 10u);
    EXPECT_LT(usage->bytes, whole);
    EXPECT_GE(usage->bytes, 10 * 64 * 1024u);
}

// Beyond the remembered inodes, each link counts its share: the same total
// when every link is in the tree, and never more.
TEST(DiskUsage, HardLinksBeyondTheCapCountTheirShare) {
    TempDir dir;
    for (int i = 0; i < 40; ++i) {
        auto file = dir.write("f" + std::to_string(i), std::string(64 * 1024, 'l'));
        fs::create_hard_link(file, dir.path() / ("g" + std::to_string(i)));
        fs::create_hard_link(file, dir.path() / ("h" + std::to_string(i)));
    }
    uint64_t exact = usage_of(dir.path());
    auto usage =
        measure_usage(testing::open_dir(dir.path()).get(), UsageLimits{.max_linked_inodes = 5});
    ASSERT_TRUE(usage.ok());
    EXPECT_EQ(usage->linked_inodes, 5u);
    EXPECT_TRUE(usage->capped.hard_links);
    EXPECT_LE(usage->bytes, exact);
    EXPECT_GE(usage->bytes, exact - 40 * 4096);  // rounding of the shares at most
}

// In a child with its own mount namespace: a tmpfs mounted inside the tree
// holds a large file that must not be counted.
int measure_across_a_mount(const fs::path& dir) {
    uint64_t before = usage_of(dir);
    fs::create_directories(dir / "mnt");
    if (::mount("tmpfs", (dir / "mnt").c_str(), "tmpfs", 0, "size=16m") < 0)
        return testing::kCannotMount;
    std::ofstream(dir / "mnt" / "big") << std::string(4 * MiB, 'x');
    uint64_t after = usage_of(dir);
    ::umount((dir / "mnt").c_str());
    return after - before < MiB ? 0 : 1;
}

TEST(DiskUsage, DoesNotCrossMountPoints) {
    if (!testing::running_as_root()) GTEST_SKIP() << "needs root to mount";
    TempDir dir;
    int result =
        testing::run_in_mount_namespace([&] { return measure_across_a_mount(dir.path()); });
    if (result == testing::kCannotMount) GTEST_SKIP() << "cannot mount here";
    EXPECT_EQ(result, 0);
}

}  // namespace
}  // namespace infervisor
