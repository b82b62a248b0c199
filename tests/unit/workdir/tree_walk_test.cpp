// The walks of trees a worker controls (measure_usage, remove_workdir_tree)
// against what a hostile worker can build: millions of entries (scaled down,
// with the memory held measured), hard links, nesting deeper than the
// descriptors a walk may hold, and directories swapped for symlinks while
// the walk runs.
#include "workdir/tree_walk.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <thread>

#include "heap_peak.h"
#include "support/byte_units.h"
#include "support/temp_dir.h"
#include "workdir/disk_usage.h"
#include "workdir/tree_removal.h"
#include "workdir_test_support.h"

namespace infervisor {
namespace {

namespace fs = std::filesystem;
using testing::HeapPeak;
using testing::TempDir;

constexpr int kManyEntries = 20'000;
// What a walk may hold: a few buffers and names, far below the listing of
// kManyEntries long names (over 4 MB) that reading a directory whole holds.
constexpr size_t kWalkHeapBound = 256 * 1024;

// kManyEntries empty files with 200-character names in dir/rel.
void fill_with_long_names(const fs::path& dir) {
    fs::create_directories(dir);
    UniqueFd fd = testing::open_dir(dir);
    for (int i = 0; i < kManyEntries; ++i) {
        std::string name = std::to_string(i) + std::string(200, 'n');
        int f = ::openat(fd.get(), name.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        ASSERT_GE(f, 0);
        ::close(f);
    }
}

fs::path nest(const fs::path& top, int levels) {
    fs::path deep = top;
    for (int i = 0; i < levels; ++i) deep /= "d";
    fs::create_directories(deep);
    return deep;
}

TEST(BoundedWalk, MeasuringAHugeDirectoryHoldsLittleMemory) {
    TempDir dir;
    fill_with_long_names(dir.path() / "many");
    UniqueFd fd = testing::open_dir(dir.path());
    HeapPeak heap;
    auto usage = measure_usage(fd.get());
    size_t held = heap.above_start();
    ASSERT_TRUE(usage.ok()) << usage.error().message();
    EXPECT_TRUE(usage->exact());
    EXPECT_EQ(usage->entries, kManyEntries + 1u);
    EXPECT_LT(held, kWalkHeapBound);
}

TEST(BoundedWalk, HardLinksAreRememberedOnlyUpToTheCap) {
    TempDir dir;
    fs::create_directories(dir.path() / "links");
    UniqueFd fd = testing::open_dir(dir.path() / "links");
    for (int i = 0; i < 5000; ++i) {
        std::string name = "f" + std::to_string(i);
        int f = ::openat(fd.get(), name.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        ASSERT_GE(f, 0);
        ::close(f);
        ASSERT_EQ(::linkat(fd.get(), name.c_str(), fd.get(), ("g" + name).c_str(), 0), 0);
    }
    UniqueFd top = testing::open_dir(dir.path());
    HeapPeak heap;
    auto usage = measure_usage(top.get(), UsageLimits{.max_linked_inodes = 100});
    size_t held = heap.above_start();
    ASSERT_TRUE(usage.ok());
    EXPECT_EQ(usage->linked_inodes, 100u);
    EXPECT_TRUE(usage->capped.hard_links);
    EXPECT_FALSE(usage->capped.entries);
    EXPECT_LT(held, kWalkHeapBound);
}

TEST(BoundedWalk, RemovingAHugeDirectoryHoldsLittleMemory) {
    TempDir dir;
    fill_with_long_names(dir.path() / "w" / "many");
    UniqueFd parent = testing::open_dir(dir.path());
    HeapPeak heap;
    auto removed = remove_workdir_tree(parent.get(), "w");
    size_t held = heap.above_start();
    ASSERT_TRUE(removed.ok()) << removed.error().message();
    EXPECT_FALSE(testing::exists_nofollow(dir.path() / "w"));
    EXPECT_LT(held, kWalkHeapBound);
}

// Deeper than the descriptors the removal may hold: it still removes
// everything (what lies below the cap is moved up and removed in a later
// pass), where it used to stop with an error and leave the tree.
TEST(BoundedWalk, RemovalOfATreeDeeperThanTheCapRemovesEverything) {
    TempDir dir;
    fs::path deep = nest(dir.path() / "w", kMaxRemovalDepth + 20);
    std::ofstream(deep / "bottom") << "x";
    UniqueFd parent = testing::open_dir(dir.path());
    auto removed = remove_workdir_tree(parent.get(), "w");
    ASSERT_TRUE(removed.ok()) << removed.error().message();
    EXPECT_FALSE(testing::exists_nofollow(dir.path() / "w"));
    EXPECT_TRUE(fs::is_empty(dir.path()));
}

// Many passes: a depth cap of 3 over 40 levels with files, links and a
// symlink out of the tree at every level; nothing outside is touched.
TEST(BoundedWalk, RemovalWithASmallDepthCapTakesPassesAndFollowsNothing) {
    TempDir dir, victim;
    victim.write("keep/file", "important");
    fs::path level = dir.path() / "w";
    for (int i = 0; i < 40; ++i) {
        level /= "l" + std::to_string(i);
        fs::create_directories(level);
        std::ofstream(level / "file") << i;
        fs::create_hard_link(level / "file", level / "link");
        fs::create_symlink(victim.path() / "keep", level / "out");
    }
    UniqueFd parent = testing::open_dir(dir.path());
    auto removed = remove_workdir_tree(parent.get(), "w", 3);
    ASSERT_TRUE(removed.ok()) << removed.error().message();
    EXPECT_TRUE(fs::is_empty(dir.path()));
    EXPECT_EQ(testing::slurp(victim.path() / "keep" / "file"), "important");
}

TEST(BoundedWalk, ContentsRemovalKeepsTheDirectory) {
    TempDir dir;
    nest(dir.path() / "trash" / "a", 12);
    dir.write("trash/b/file", "x");
    UniqueFd trash = testing::open_dir(dir.path() / "trash");
    auto removed = remove_tree_contents(trash.get(), "trash", 4);
    ASSERT_TRUE(removed.ok()) << removed.error().message();
    EXPECT_TRUE(fs::is_directory(dir.path() / "trash"));
    EXPECT_TRUE(fs::is_empty(dir.path() / "trash"));
}

// A worker swaps a directory of its tree with a symlink to a victim
// (RENAME_EXCHANGE: both names always exist) as fast as it can while the
// daemon walks: the victim is never counted, entered or changed.
class Swapper {
  public:
    Swapper(const fs::path& a, const fs::path& b) {
        thread_ = std::thread([this, a, b] {
            while (!stop_ &&
                   ::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) == 0)
                ++swaps_;
        });
    }
    ~Swapper() {
        stop_ = true;
        thread_.join();
    }
    uint64_t swaps() const { return swaps_; }

  private:
    std::atomic<bool> stop_{false};
    std::atomic<uint64_t> swaps_{0};
    std::thread thread_;
};

struct SwappedTree {
    TempDir dir, victim;
    SwappedTree() {
        victim.write("big", std::string(4 * MiB, 'v'));
        victim.write("sub/file", "important");
        dir.write("w/sub/small", "s");
        dir.write("w/sub/inner/small", "s");
        fs::create_directory_symlink(victim.path(), dir.path() / "w" / "link");
    }
    void expect_victim_untouched() const {
        EXPECT_EQ(fs::file_size(victim.path() / "big"), 4 * MiB);
        EXPECT_EQ(testing::slurp(victim.path() / "sub" / "file"), "important");
    }
};

TEST(BoundedWalk, MeasuringWhileDirectoriesAreSwappedForSymlinksNeverFollowsThem) {
    SwappedTree tree;
    UniqueFd fd = testing::open_dir(tree.dir.path());
    uint64_t before = 0;
    {
        Swapper swapper(tree.dir.path() / "w" / "sub", tree.dir.path() / "w" / "link");
        for (int i = 0; i < 300 || swapper.swaps() == 0; ++i) {
            auto usage = measure_usage(fd.get());
            ASSERT_TRUE(usage.ok()) << usage.error().message();
            EXPECT_LT(usage->bytes, MiB) << "the victim was counted";
            before = usage->bytes;
        }
    }
    EXPECT_GT(before, 0u);
    tree.expect_victim_untouched();
}

TEST(BoundedWalk, RemovingWhileDirectoriesAreSwappedForSymlinksNeverFollowsThem) {
    for (int round = 0; round < 20; ++round) {
        SwappedTree tree;
        for (int i = 0; i < 200; ++i) tree.dir.write("w/sub/f" + std::to_string(i), "x");
        UniqueFd parent = testing::open_dir(tree.dir.path());
        Result<void> removed;
        {
            Swapper swapper(tree.dir.path() / "w" / "sub", tree.dir.path() / "w" / "link");
            removed = remove_workdir_tree(parent.get(), "w");
        }
        // While names are swapped under it a pass may find nothing it can
        // remove and fail, saying so (the contract); once the swapping has
        // stopped, the removal completes.
        if (!removed) {
            EXPECT_THAT(removed.error().message(), ::testing::HasSubstr("cannot be removed"));
            removed = remove_workdir_tree(parent.get(), "w");
        }
        EXPECT_TRUE(removed.ok()) << removed.error().message();
        EXPECT_FALSE(testing::exists_nofollow(tree.dir.path() / "w"));
        tree.expect_victim_untouched();
    }
}

}  // namespace
}  // namespace infervisor
