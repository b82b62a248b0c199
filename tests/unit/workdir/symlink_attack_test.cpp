// A worker controls what is inside its own directory. These tests play the
// worker: they swap directories for symlinks to a "victim" directory (standing
// in for /etc or another worker's dir) and check that the daemon's
// operations never touch the victim and say clearly what they refused.
#include <gtest/gtest.h>

#include "support/temp_dir.h"
#include "workdir/disk_usage.h"
#include "workdir/safe_path.h"
#include "workdir/tree_removal.h"
#include "workdir/workdir_manager.h"
#include "workdir_test_support.h"

namespace infervisor {
namespace {

namespace fs = std::filesystem;
using testing::lstat_of;
using testing::slurp;
using testing::TempDir;

constexpr uid_t kWorkerUid = 65534;
constexpr gid_t kWorkerGid = 65534;

// A directory the daemon must never change: its owner, mode and content are
// recorded and compared.
struct Victim {
    TempDir dir;
    Victim() {
        dir.write("passwd", "root:x:0:0\n");
        dir.mkdir("sub");
        ::chmod(dir.path().c_str(), 0755);
    }
    void expect_untouched() const {
        auto st = lstat_of(dir.path());
        EXPECT_EQ(st.st_uid, 0u);
        EXPECT_EQ(st.st_mode & 07777, 0755u);
        EXPECT_EQ(lstat_of(dir.path() / "passwd").st_uid, 0u);
        EXPECT_EQ(slurp(dir.path() / "passwd"), "root:x:0:0\n");
        EXPECT_TRUE(fs::is_directory(dir.path() / "sub"));
        EXPECT_FALSE(fs::exists(dir.path() / "tmp"));
    }
};

struct SymlinkAttack : ::testing::Test {
    TempDir root;
    Victim victim;
    Paths paths{.state_dir = root.path() / "state", .tmpfiles_dir = root.path() / "tmpfiles.d"};
    WorkDirManager manager{paths};
    WorkDirSpec spec{.worker = "llama"};
    fs::path workdir = root.path() / "state/workers/llama";

    void SetUp() override {
        if (!testing::running_as_root()) GTEST_SKIP() << "needs root (chown to other users)";
    }
    void replace_with_symlink(const fs::path& path, const fs::path& target) {
        fs::remove_all(path);
        fs::create_symlink(target, path);
        ::lchown(path.c_str(), kWorkerUid, kWorkerGid);  // planted by the worker
    }
};

TEST_F(SymlinkAttack, WorkDirReplacedBySymlinkIsRefused) {
    ASSERT_TRUE(manager.prepare(spec, kWorkerUid, kWorkerGid).ok());
    ASSERT_TRUE(manager.release("llama").ok());
    replace_with_symlink(workdir, victim.dir.path());

    auto r = manager.prepare(spec, kWorkerUid, kWorkerGid);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find(workdir.string() + " is a symbolic link"), std::string::npos)
        << r.error().message();
    victim.expect_untouched();
}

TEST_F(SymlinkAttack, TmpDirReplacedBySymlinkIsRefused) {
    ASSERT_TRUE(manager.prepare(spec, kWorkerUid, kWorkerGid).ok());
    replace_with_symlink(workdir / "tmp", victim.dir.path());

    auto r = manager.prepare(spec, kWorkerUid, kWorkerGid);  // the restart
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find((workdir / "tmp").string() + " is a symbolic link"),
              std::string::npos)
        << r.error().message();
    victim.expect_untouched();
}

TEST_F(SymlinkAttack, TmpDirReplacedByAFileIsRefused) {
    ASSERT_TRUE(manager.prepare(spec, kWorkerUid, kWorkerGid).ok());
    fs::remove(workdir / "tmp");
    root.write("state/workers/llama/tmp", "not a dir");
    auto r = manager.prepare(spec, kWorkerUid, kWorkerGid);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("exists but is not a directory"), std::string::npos);
}

TEST_F(SymlinkAttack, ExtraDirReplacedBySymlinkIsRefused) {
    auto cache = root.path() / "cache-llama";
    spec.extra_dirs = {{cache, 0777, true}};
    ASSERT_TRUE(manager.prepare(spec, kWorkerUid, kWorkerGid).ok());
    ASSERT_TRUE(manager.release("llama").ok());
    replace_with_symlink(cache, victim.dir.path());
    auto r = manager.prepare(spec, kWorkerUid, kWorkerGid);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("is a symbolic link"), std::string::npos);
    victim.expect_untouched();
}

TEST_F(SymlinkAttack, SymlinksPlantedInsideAreNeitherChownedNorFollowed) {
    ASSERT_TRUE(manager.prepare(spec, kWorkerUid, kWorkerGid).ok());
    fs::create_symlink(victim.dir.path(), workdir / "etc");
    fs::create_symlink(victim.dir.path() / "passwd", workdir / "tmp" / "passwd");
    fs::create_directories(workdir / "a/b");
    fs::create_symlink(victim.dir.path(), workdir / "a/b/up");

    ASSERT_TRUE(manager.prepare(spec, kWorkerUid, kWorkerGid).ok());
    victim.expect_untouched();

    auto usage = measure_usage(testing::open_dir(workdir).get());
    ASSERT_TRUE(usage.ok());
    victim.dir.write("big", std::string(1 << 20, 'x'));
    auto after = measure_usage(testing::open_dir(workdir).get());
    EXPECT_EQ(after->bytes, usage->bytes);  // the victim's growth is not counted

    ASSERT_TRUE(manager.release("llama").ok());
    auto removed = manager.remove_workdir(spec, kWorkerUid);
    ASSERT_TRUE(removed.ok()) << removed.error().message();
    EXPECT_FALSE(testing::exists_nofollow(workdir));
    victim.expect_untouched();
}

TEST_F(SymlinkAttack, RemovingAWorkDirThatIsASymlinkUnlinksOnlyTheLink) {
    ASSERT_TRUE(manager.prepare(spec, kWorkerUid, kWorkerGid).ok());
    ASSERT_TRUE(manager.release("llama").ok());
    replace_with_symlink(workdir, victim.dir.path());
    ASSERT_TRUE(manager.remove_workdir(spec, kWorkerUid).ok());
    EXPECT_FALSE(testing::exists_nofollow(workdir));
    victim.expect_untouched();
}

TEST_F(SymlinkAttack, SymlinkOwnedByAUserOnTheWayIsRefused) {
    root.mkdir("real");
    fs::create_symlink(root.path() / "real", root.path() / "link");
    ASSERT_EQ(::lchown((root.path() / "link").c_str(), kWorkerUid, kWorkerGid), 0);
    spec.workdir = root.path() / "link" / "llama";
    auto r = manager.prepare(spec, kWorkerUid, kWorkerGid);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("refusing to follow symbolic link"), std::string::npos)
        << r.error().message();
    EXPECT_FALSE(fs::exists(root.path() / "real" / "llama"));
}

TEST_F(SymlinkAttack, RootSymlinkInAUserDirectoryIsRefused) {
    auto user_dir = root.mkdir("home");
    ASSERT_EQ(::chown(user_dir.c_str(), kWorkerUid, kWorkerGid), 0);
    fs::create_symlink(victim.dir.path(), user_dir / "link");  // root-owned link
    auto r = open_trusted_dir(user_dir / "link", WalkOptions{.allowed_uid = kWorkerUid});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("refusing to follow symbolic link"), std::string::npos);
}

TEST_F(SymlinkAttack, RootSymlinkInARootDirectoryIsFollowed) {
    root.mkdir("real");
    fs::create_symlink("real", root.path() / "link");  // like /var/run -> /run
    spec.workdir = root.path() / "link" / "llama";
    auto r = manager.prepare(spec, kWorkerUid, kWorkerGid);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(lstat_of(root.path() / "real" / "llama").st_uid, kWorkerUid);
}

TEST_F(SymlinkAttack, AncestorOwnedByAnotherUserIsRefused) {
    auto other = root.mkdir("other");
    ASSERT_EQ(::chown(other.c_str(), 12345, 12345), 0);
    spec.workdir = other / "llama";
    auto r = manager.prepare(spec, kWorkerUid, kWorkerGid);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("owned by uid 12345"), std::string::npos)
        << r.error().message();
    EXPECT_FALSE(fs::exists(other / "llama"));
}

TEST_F(SymlinkAttack, WorldWritableAncestorWithoutStickyBitIsRefused) {
    auto open_dir = root.mkdir("open");
    ASSERT_EQ(::chmod(open_dir.c_str(), 0777), 0);
    spec.workdir = open_dir / "llama";
    auto r = manager.prepare(spec, kWorkerUid, kWorkerGid);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("has no sticky bit"), std::string::npos);

    ASSERT_EQ(::chmod(open_dir.c_str(), 01777), 0);  // like /tmp
    EXPECT_TRUE(manager.prepare(spec, kWorkerUid, kWorkerGid).ok());
}

TEST_F(SymlinkAttack, WorkerOwnedAncestorIsAllowedForItsOwnDirs) {
    auto home = root.mkdir("home-llama");
    ASSERT_EQ(::chown(home.c_str(), kWorkerUid, kWorkerGid), 0);
    spec.extra_dirs = {{home / "cache", 0700, true}};
    auto r = manager.prepare(spec, kWorkerUid, kWorkerGid);
    ASSERT_TRUE(r.ok()) << r.error().message();
}

TEST_F(SymlinkAttack, TreeRemovalNeverFollowsSymlinksAtAnyDepth) {
    auto tree = root.mkdir("tree");
    root.write("sentinel", "keep me");
    root.write("tree/a/b/c/file", "x");
    fs::create_symlink(victim.dir.path(), tree / "a" / "b" / "to-victim");
    fs::create_symlink(victim.dir.path() / "passwd", tree / "a" / "passwd");
    fs::create_symlink("../../..", tree / "a" / "b" / "c" / "up");
    auto parent = testing::open_dir(root.path());
    auto r = remove_workdir_tree(parent.get(), "tree");
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_FALSE(testing::exists_nofollow(tree));
    victim.expect_untouched();
    EXPECT_EQ(slurp(root.path() / "sentinel"), "keep me");
}

}  // namespace
}  // namespace infervisor
