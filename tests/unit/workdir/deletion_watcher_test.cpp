#include "workdir/deletion_watcher.h"

#include <gtest/gtest.h>

#include "support/temp_dir.h"
#include "workdir_test_support.h"

namespace infervisor {
namespace {

namespace fs = std::filesystem;
using Kind = DeletionEvent::Kind;
using testing::TempDir;

struct Watched : ::testing::Test {
    TempDir root;
    fs::path dir = root.mkdir("llama");
    UniqueFd dir_fd = testing::open_dir(dir);
    DeletionWatcher watcher = std::move(DeletionWatcher::create().value());

    void SetUp() override { ASSERT_TRUE(watcher.watch("llama", dir, dir_fd.get()).ok()); }
    std::vector<DeletionEvent> drain() {
        auto events = watcher.drain();
        EXPECT_TRUE(events.ok());
        return events.value_or({});
    }
};

TEST_F(Watched, ReportsDeletedAndMovedAwayEntries) {
    root.write("llama/model.bin", "w");
    root.mkdir("llama/cache");
    root.write("llama/moved", "m");
    EXPECT_TRUE(drain().empty());  // creation is not reported

    fs::remove(dir / "model.bin");
    fs::remove(dir / "cache");
    fs::rename(dir / "moved", root.path() / "elsewhere");
    auto events = drain();
    ASSERT_EQ(events.size(), 3u);
    EXPECT_EQ(events[0], (DeletionEvent{Kind::entry_deleted, "llama", dir, "model.bin", false}));
    EXPECT_EQ(events[1], (DeletionEvent{Kind::entry_deleted, "llama", dir, "cache", true}));
    EXPECT_EQ(events[2], (DeletionEvent{Kind::entry_moved_out, "llama", dir, "moved", false}));
    EXPECT_TRUE(drain().empty());  // drained, and it does not block
}

// An atomic save (write x.tmp, rename to x) removes nothing from the dir.
TEST_F(Watched, ARenameWithinTheDirectoryIsNotAMoveAway) {
    root.write("llama/state.tmp", "new");
    root.write("llama/gone", "g");
    EXPECT_TRUE(drain().empty());
    fs::rename(dir / "state.tmp", dir / "state");
    fs::remove(dir / "gone");
    auto events = drain();
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0], (DeletionEvent{Kind::entry_deleted, "llama", dir, "gone", false}));
}

// A busy deleter must not keep the caller in drain(): a bounded drain says
// that more is pending, and the next call gets the rest.
TEST_F(Watched, ABoundedDrainLeavesTheRestForTheNextCall) {
    for (int i = 0; i < 2000; ++i) root.write("llama/f" + std::to_string(i), "x");
    EXPECT_TRUE(drain().empty());
    for (int i = 0; i < 2000; ++i) fs::remove(dir / ("f" + std::to_string(i)));
    auto first = watcher.drain(1);
    ASSERT_TRUE(first.ok());
    EXPECT_TRUE(watcher.more_pending());
    EXPECT_GT(first->size(), 0u);
    EXPECT_LT(first->size(), 2000u);
    size_t total = first->size();
    while (watcher.more_pending()) total += watcher.drain(1).value_or({}).size();
    EXPECT_EQ(total, 2000u);
    EXPECT_TRUE(drain().empty());
    EXPECT_FALSE(watcher.more_pending());
}

TEST_F(Watched, ReportsTheDirectoryItselfGoing) {
    fs::rename(dir, root.path() / "renamed");
    auto moved = drain();
    ASSERT_EQ(moved.size(), 1u);
    EXPECT_EQ(moved[0], (DeletionEvent{Kind::dir_moved, "llama", dir, "", false}));

    // While the daemon holds it open, an rmdir shows in the link count only.
    EXPECT_FALSE(was_removed(dir_fd.get()));
    fs::remove(root.path() / "renamed");
    EXPECT_TRUE(was_removed(dir_fd.get()));
    EXPECT_TRUE(drain().empty());

    dir_fd.reset();  // the daemon lets go: the kernel reports the deletion
    auto deleted = drain();
    ASSERT_EQ(deleted.size(), 1u);
    EXPECT_EQ(deleted[0], (DeletionEvent{Kind::dir_deleted, "llama", dir, "", false}));
}

TEST_F(Watched, DoesNotReportBelowTheRoot) {
    root.write("llama/sub/file", "x");
    drain();
    fs::remove(dir / "sub" / "file");
    EXPECT_TRUE(drain().empty());
}

TEST_F(Watched, StopsAfterUnwatch) {
    root.write("llama/file", "x");
    watcher.unwatch("llama");
    fs::remove(dir / "file");
    EXPECT_TRUE(drain().empty());
}

TEST_F(Watched, WatchesTheOpenedDirectoryNotThePath) {
    fs::rename(dir, root.path() / "moved-away");
    root.mkdir("llama");  // a new directory at the old path
    drain();
    root.write("llama/x", "x");
    fs::remove(dir / "x");
    EXPECT_TRUE(drain().empty());
    root.write("moved-away/y", "y");
    fs::remove(root.path() / "moved-away" / "y");
    auto events = drain();
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].entry, "y");
}

}  // namespace
}  // namespace infervisor
