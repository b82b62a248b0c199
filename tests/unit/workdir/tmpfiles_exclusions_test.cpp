#include "workdir/tmpfiles_exclusions.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "support/temp_dir.h"
#include "workdir_test_support.h"

namespace infervisor {
namespace {

namespace fs = std::filesystem;
using testing::slurp;
using testing::TempDir;

TEST(TmpfilesExclusions, RendersOneSortedXLinePerPath) {
    auto text =
        render_tmpfiles_exclusions({"/var/tmp/llama-cache", "/var/lib/infervisor/workers/a"});
    ASSERT_TRUE(text.ok());
    EXPECT_EQ(text->substr(0, 1), "#");
    EXPECT_NE(text->find("\nx /var/lib/infervisor/workers/a\nx /var/tmp/llama-cache\n"),
              std::string::npos)
        << *text;
}

TEST(TmpfilesExclusions, RefusesPathsTmpfilesWouldReadAsSyntax) {
    for (const char* bad : {"/tmp/a b", "/tmp/a%n", "/tmp/a*", "/tmp/a?", "/tmp/[a]", "/tmp/\"a",
                            "/tmp/a\\b", "/tmp/a\nx /etc", "relative"})
        EXPECT_FALSE(render_tmpfiles_exclusions({bad}).ok()) << bad;
}

TEST(TmpfilesExclusions, WritesCreatesDirAndRemovesWhenEmpty) {
    TempDir dir;
    auto tmpfiles_dir = dir.path() / "run" / "tmpfiles.d";
    ASSERT_TRUE(write_tmpfiles_exclusions(tmpfiles_dir, {"/var/tmp/a"}).ok());
    auto file = tmpfiles_dir / kTmpfilesExclusionFile;
    EXPECT_NE(slurp(file).find("\nx /var/tmp/a\n"), std::string::npos);
    EXPECT_EQ(testing::lstat_of(file).st_mode & 0777, 0644u);

    ASSERT_TRUE(write_tmpfiles_exclusions(tmpfiles_dir, {}).ok());
    EXPECT_FALSE(fs::exists(file));
    EXPECT_TRUE(write_tmpfiles_exclusions(tmpfiles_dir, {}).ok());  // nothing to remove: fine
}

TEST(TmpfilesExclusions, ReplacesTheFileAtomically) {
    TempDir dir;
    ASSERT_TRUE(write_tmpfiles_exclusions(dir.path(), {"/var/tmp/old"}).ok());
    auto file = dir.path() / kTmpfilesExclusionFile;
    // A reader that opened the old file (a tmpfiles run in progress) keeps
    // reading the complete old content; the path names a new inode.
    std::ifstream reader(file);
    ino_t old_inode = testing::lstat_of(file).st_ino;

    ASSERT_TRUE(write_tmpfiles_exclusions(dir.path(), {"/var/tmp/new"}).ok());
    EXPECT_NE(testing::lstat_of(file).st_ino, old_inode);
    std::stringstream old_content;
    old_content << reader.rdbuf();
    EXPECT_NE(old_content.str().find("x /var/tmp/old\n"), std::string::npos);
    EXPECT_EQ(slurp(file).find("old"), std::string::npos);
    EXPECT_NE(slurp(file).find("x /var/tmp/new\n"), std::string::npos);
    // No temporary file is left behind.
    size_t entries = std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator());
    EXPECT_EQ(entries, 1u);
}

TEST(TmpfilesExclusions, ReplacesAStaleTemporaryEvenIfItIsASymlink) {
    TempDir dir;
    TempDir victim;
    victim.write("target", "keep");
    fs::create_symlink(victim.path() / "target", dir.path() / ".infervisor-workdirs.conf.tmp");
    ASSERT_TRUE(write_tmpfiles_exclusions(dir.path(), {"/var/tmp/a"}).ok());
    EXPECT_EQ(slurp(victim.path() / "target"), "keep");
    EXPECT_NE(slurp(dir.path() / kTmpfilesExclusionFile).find("x /var/tmp/a"), std::string::npos);
}

}  // namespace
}  // namespace infervisor
