// fanotify on this machine's real kernel: deletions by other processes,
// with their pids.
#include "workdir/fanotify_deletion_watcher.h"

#include <gtest/gtest.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include "support/temp_dir.h"
#include "workdir_test_support.h"

namespace infervisor {
namespace {

namespace fs = std::filesystem;
using Kind = DeletionEvent::Kind;
using testing::TempDir;

// Runs `rm -rf PATH` (or mv PATH TARGET) in a child; returns its pid once it exited.
pid_t run_child(const std::vector<std::string>& argv) {
    pid_t pid = ::fork();
    if (pid == 0) {
        std::vector<char*> args;
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        ::execvp(args[0], args.data());
        ::_exit(127);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << argv[0];
    return pid;
}

struct FanotifyWatched : ::testing::Test {
    TempDir root;
    fs::path dir = root.mkdir("models");
    UniqueFd dir_fd = testing::open_dir(dir);
    std::optional<FanotifyDeletionWatcher> watcher;

    void SetUp() override {
        auto w = FanotifyDeletionWatcher::create();
        if (!w) GTEST_SKIP() << w.error().message() << " (needs root and kernel >= 5.9)";
        watcher.emplace(std::move(*w));
        auto r = watcher->watch("llama", dir, dir_fd.get());
        if (!r) GTEST_SKIP() << r.error().message() << " (file system without file handles)";
    }
    std::vector<DeletionReport> drain() {
        auto events = watcher->drain();
        EXPECT_TRUE(events.ok());
        return events.value_or({});
    }
};

TEST_F(FanotifyWatched, NamesTheProcessThatDeletedOrMovedAnEntry) {
    root.write("models/model.bin", "w");
    root.mkdir("models/cache");
    root.write("models/moved", "m");
    EXPECT_TRUE(drain().empty());  // creation is not reported

    pid_t rm = run_child({"rm", "-r", (dir / "model.bin").string(), (dir / "cache").string()});
    pid_t mv = run_child({"mv", (dir / "moved").string(), (root.path() / "elsewhere").string()});
    auto events = drain();
    ASSERT_EQ(events.size(), 3u);
    EXPECT_EQ(events[0].event,
              (DeletionEvent{Kind::entry_deleted, "llama", dir, "model.bin", false}));
    EXPECT_EQ(events[0].pid, rm);
    EXPECT_EQ(events[1].event, (DeletionEvent{Kind::entry_deleted, "llama", dir, "cache", true}));
    EXPECT_EQ(events[1].pid, rm);
    EXPECT_EQ(events[2].event,
              (DeletionEvent{Kind::entry_moved_out, "llama", dir, "moved", false}));
    EXPECT_EQ(events[2].pid, mv);
    EXPECT_TRUE(drain().empty());
}

// An atomic save (write x.tmp, rename to x) removes nothing from the dir
// (kernels >= 5.17, with FAN_RENAME; before, every move counts).
TEST_F(FanotifyWatched, ARenameWithinTheDirectoryIsNotAMoveAway) {
    root.write("models/state.tmp", "new");
    root.write("models/gone", "g");
    EXPECT_TRUE(drain().empty());
    pid_t mv = run_child({"mv", (dir / "state.tmp").string(), (dir / "state").string()});
    pid_t rm = run_child({"rm", (dir / "gone").string()});
    auto events = drain();
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.back().event,
              (DeletionEvent{Kind::entry_deleted, "llama", dir, "gone", false}));
    EXPECT_EQ(events.back().pid, rm);
    struct utsname u {};
    ::uname(&u);
    int major = 0, minor = 0;
    std::sscanf(u.release, "%d.%d", &major, &minor);
    if (major > 5 || (major == 5 && minor >= 17)) {
        EXPECT_EQ(events.size(), 1u) << "the rename by pid " << mv << " was reported";
    }
}

TEST_F(FanotifyWatched, IgnoresOtherDirectoriesAndStopsAfterUnwatch) {
    root.write("models/sub/file", "x");
    root.write("other/file", "x");
    fs::remove(dir / "sub" / "file");  // below the root: not reported
    fs::remove(root.path() / "other" / "file");
    EXPECT_TRUE(drain().empty());
    EXPECT_TRUE(watcher->watches("llama"));
    watcher->unwatch("llama");
    EXPECT_FALSE(watcher->watches("llama"));
    root.write("models/late", "x");
    fs::remove(dir / "late");
    EXPECT_TRUE(drain().empty());
}

TEST_F(FanotifyWatched, MatchesTheOpenedDirectoryNotThePath) {
    fs::rename(dir, root.path() / "moved-away");
    root.mkdir("models");  // a new directory at the old path
    root.write("models/new", "x");
    root.write("moved-away/old", "x");
    fs::remove(dir / "new");
    fs::remove(root.path() / "moved-away" / "old");
    auto events = drain();
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].event.entry, "old");
    EXPECT_EQ(events[0].pid, ::getpid());
}

}  // namespace
}  // namespace infervisor
