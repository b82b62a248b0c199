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
    return usage.value_or(0);
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
    EXPECT_EQ(*usage, usage_of(dir.path()));
}

TEST(DiskUsage, FailsOnATreeTooDeepToWalk) {
    TempDir dir;
    fs::path deep = dir.path();
    for (int i = 0; i <= kMaxUsageDepth + 1; ++i) deep /= "d";
    fs::create_directories(deep);
    EXPECT_FALSE(measure_usage(testing::open_dir(dir.path()).get()).ok());
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
