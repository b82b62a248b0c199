#include "workdir/safe_path.h"

#include <gtest/gtest.h>

#include "support/temp_dir.h"
#include "workdir_test_support.h"

namespace infervisor {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

ino_t inode_of(int fd) {
    struct stat st;
    return ::fstat(fd, &st) == 0 ? st.st_ino : 0;
}

TEST(SafePath, OpensAnExistingDirectory) {
    TempDir dir;
    auto target = dir.mkdir("a/b");
    auto fd = open_trusted_dir(target, {});
    ASSERT_TRUE(fd.ok()) << fd.error().message();
    EXPECT_EQ(inode_of(fd->get()), testing::lstat_of(target).st_ino);
}

TEST(SafePath, CreatesMissingDirectoriesOnlyWhenAsked) {
    TempDir dir;
    auto target = dir.path() / "x" / "y";
    auto missing = open_trusted_dir(target, {});
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.error().code, ENOENT);
    auto created = open_trusted_dir(target, {.create = CreateMissing::yes, .create_mode = 0711});
    ASSERT_TRUE(created.ok()) << created.error().message();
    EXPECT_EQ(testing::lstat_of(target).st_mode & 0777, 0711u);
}

TEST(SafePath, RefusesAFileOnTheWay) {
    TempDir dir;
    dir.write("file", "x");
    auto r = open_trusted_dir(dir.path() / "file" / "sub", {.create = CreateMissing::yes});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("is not a directory"), std::string::npos);
}

TEST(SafePath, RefusesRelativePaths) { EXPECT_FALSE(open_trusted_dir("tmp", {}).ok()); }

TEST(SafePath, FollowsRootLinksWithDotDotInTheirTarget) {
    TempDir dir;
    auto real = dir.mkdir("real/inner");
    fs::create_symlink("../real/inner", dir.mkdir("links") / "to-inner");
    auto fd = open_trusted_dir(dir.path() / "links" / "to-inner", {});
    ASSERT_TRUE(fd.ok()) << fd.error().message();
    EXPECT_EQ(inode_of(fd->get()), testing::lstat_of(real).st_ino);
}

TEST(SafePath, StopsOnSymlinkLoops) {
    TempDir dir;
    fs::create_symlink("b", dir.path() / "a");
    fs::create_symlink("a", dir.path() / "b");
    auto r = open_trusted_dir(dir.path() / "a" / "x", {});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, ELOOP);
}

TEST(SafePath, TrustRules) {
    struct stat st {};
    st.st_mode = S_IFDIR | 0755;
    EXPECT_TRUE(is_trusted_dir(st, 0));
    st.st_mode = S_IFDIR | 01777;
    EXPECT_TRUE(is_trusted_dir(st, 0));  // /tmp
    st.st_mode = S_IFDIR | 0777;
    EXPECT_FALSE(is_trusted_dir(st, 0));
    st.st_mode = S_IFDIR | 0775;
    st.st_gid = 100;
    EXPECT_FALSE(is_trusted_dir(st, 0));
    st.st_mode = S_IFDIR | 0755;
    st.st_uid = 1000;
    EXPECT_FALSE(is_trusted_dir(st, 0));
    EXPECT_TRUE(is_trusted_dir(st, 1000));
}

}  // namespace
}  // namespace infervisor
