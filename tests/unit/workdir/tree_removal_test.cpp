#include "workdir/tree_removal.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "support/temp_dir.h"
#include "workdir_test_support.h"

namespace infervisor {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

TEST(TreeRemoval, RemovesTheWholeTree) {
    TempDir dir;
    dir.write("w/a/b/c/file", "x");
    dir.write("w/top", "y");
    dir.mkdir("w/empty");
    ::chmod((dir.path() / "w/a/b").c_str(), 0);  // root removes it anyway
    auto parent = testing::open_dir(dir.path());
    auto r = remove_workdir_tree(parent.get(), "w");
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_FALSE(fs::exists(dir.path() / "w"));
}

TEST(TreeRemoval, MissingDirectoryIsSuccess) {
    TempDir dir;
    auto parent = testing::open_dir(dir.path());
    EXPECT_TRUE(remove_workdir_tree(parent.get(), "absent").ok());
}

TEST(TreeRemoval, RefusesNamesThatAreNotOneComponent) {
    TempDir dir;
    auto parent = testing::open_dir(dir.path());
    for (const char* bad : {"", ".", "..", "a/b"})
        EXPECT_FALSE(remove_workdir_tree(parent.get(), bad).ok()) << bad;
}

TEST(TreeRemoval, UnlinksSymlinksInsteadOfFollowingThem) {
    TempDir dir, outside;
    outside.write("keep/file", "important");
    dir.mkdir("w");
    fs::create_symlink(outside.path() / "keep", dir.path() / "w" / "link-dir");
    fs::create_symlink(outside.path() / "keep" / "file", dir.path() / "w" / "link-file");
    auto parent = testing::open_dir(dir.path());
    ASSERT_TRUE(remove_workdir_tree(parent.get(), "w").ok());
    EXPECT_FALSE(testing::exists_nofollow(dir.path() / "w"));
    EXPECT_EQ(testing::slurp(outside.path() / "keep" / "file"), "important");
}

int remove_across_a_mount(const fs::path& dir) {
    fs::create_directories(dir / "w" / "mnt");
    if (::mount("tmpfs", (dir / "w" / "mnt").c_str(), "tmpfs", 0, "size=1m") < 0)
        return testing::kCannotMount;
    { std::ofstream(dir / "w" / "mnt" / "on-the-mount") << "x"; }
    auto parent = testing::open_dir(dir);
    auto r = remove_workdir_tree(parent.get(), "w");
    bool kept = fs::exists(dir / "w" / "mnt" / "on-the-mount");
    ::umount((dir / "w" / "mnt").c_str());
    return !r.ok() && r.error().code == EBUSY && kept ? 0 : 1;
}

TEST(TreeRemoval, NeverDescendsIntoAMount) {
    if (!testing::running_as_root()) GTEST_SKIP() << "needs root to mount";
    TempDir dir;
    int result = testing::run_in_mount_namespace([&] { return remove_across_a_mount(dir.path()); });
    if (result == testing::kCannotMount) GTEST_SKIP() << "cannot mount here";
    EXPECT_EQ(result, 0);
}

}  // namespace
}  // namespace infervisor
