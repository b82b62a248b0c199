#include "workdir/workdir_manager.h"

#include <gtest/gtest.h>
#include <sys/file.h>

#include "support/temp_dir.h"
#include "workdir/tmpfiles_exclusions.h"
#include "workdir_test_support.h"

namespace infervisor {
namespace {

namespace fs = std::filesystem;
using testing::lstat_of;
using testing::slurp;
using testing::TempDir;

constexpr uid_t kNobody = 65534;
constexpr gid_t kNogroup = 65534;

struct ManagerFixture : ::testing::Test {
    TempDir root;
    Paths paths{.state_dir = root.path() / "state", .tmpfiles_dir = root.path() / "tmpfiles.d"};
    WorkDirManager manager{paths};

    fs::path exclusion_file() const { return paths.tmpfiles_dir / kTmpfilesExclusionFile; }
    void SetUp() override {
        if (!testing::running_as_root()) GTEST_SKIP() << "needs root (chown to other users)";
    }
};

TEST_F(ManagerFixture, CreatesPrivateWorkDirOwnedByTheWorker) {
    auto layout = manager.prepare(WorkDirSpec{.worker = "llama"}, kNobody, kNogroup);
    ASSERT_TRUE(layout.ok()) << layout.error().message();
    EXPECT_EQ(layout->workdir, paths.state_dir / "workers" / "llama");
    EXPECT_EQ(layout->tmpdir, layout->workdir / "tmp");
    for (const auto& dir : {layout->workdir, layout->tmpdir}) {
        auto st = lstat_of(dir);
        EXPECT_TRUE(S_ISDIR(st.st_mode)) << dir;
        EXPECT_EQ(st.st_uid, kNobody) << dir;
        EXPECT_EQ(st.st_gid, kNogroup) << dir;
        EXPECT_EQ(st.st_mode & 07777, 0700u) << dir;
    }
    auto workers = lstat_of(paths.state_dir / "workers");
    EXPECT_EQ(workers.st_uid, 0u);
    EXPECT_EQ(workers.st_mode & 0777, 0711u);
}

TEST_F(ManagerFixture, PrepareIsIdempotentAndKeepsContentsAcrossRestarts) {
    WorkDirSpec spec{.worker = "llama"};
    auto first = manager.prepare(spec, kNobody, kNogroup);
    ASSERT_TRUE(first.ok()) << first.error().message();
    root.write(first->workdir.lexically_relative(root.path()) / "model.bin", "weights");
    root.write(first->tmpdir.lexically_relative(root.path()) / "scratch", "partial");

    auto again = manager.prepare(spec, kNobody, kNogroup);  // a restart
    ASSERT_TRUE(again.ok()) << again.error().message();
    EXPECT_EQ(*again, *first);
    EXPECT_EQ(slurp(first->workdir / "model.bin"), "weights");
    EXPECT_EQ(slurp(first->tmpdir / "scratch"), "partial");

    // A new manager (a daemon restart) finds and keeps the same dir.
    WorkDirManager restarted(paths);
    ASSERT_TRUE(restarted.prepare(spec, kNobody, kNogroup).ok());
    EXPECT_EQ(slurp(first->workdir / "model.bin"), "weights");
}

TEST_F(ManagerFixture, RecreatesTmpDirTheWorkerDeleted) {
    auto layout = manager.prepare(WorkDirSpec{.worker = "llama"}, kNobody, kNogroup);
    ASSERT_TRUE(layout.ok());
    fs::remove(layout->tmpdir);
    ASSERT_TRUE(manager.prepare(WorkDirSpec{.worker = "llama"}, kNobody, kNogroup).ok());
    EXPECT_EQ(lstat_of(layout->tmpdir).st_uid, kNobody);
}

TEST_F(ManagerFixture, CreatesExtraDirsWithTheirModes) {
    WorkDirSpec spec{.worker = "llama",
                     .extra_dirs = {{root.path() / "cache" / "llama", 0750, true},
                                    {root.path() / "scratch-llama", 0700, false}}};
    auto layout = manager.prepare(spec, kNobody, kNogroup);
    ASSERT_TRUE(layout.ok()) << layout.error().message();
    ASSERT_EQ(layout->extra_dirs.size(), 2u);
    auto cache = lstat_of(root.path() / "cache" / "llama");
    EXPECT_EQ(cache.st_uid, kNobody);
    EXPECT_EQ(cache.st_mode & 07777, 0750u);
    EXPECT_EQ(lstat_of(root.path() / "cache").st_uid, 0u);  // a created parent stays root's

    const PreparedWorkDir* prepared = manager.find("llama");
    ASSERT_NE(prepared, nullptr);
    EXPECT_TRUE(prepared->workdir.is_protected());
    EXPECT_TRUE(prepared->extra_dirs[0].is_protected());
    EXPECT_FALSE(prepared->extra_dirs[1].is_protected());
}

TEST_F(ManagerFixture, ProtectedDirsAreLockedAgainstTmpfiles) {
    auto layout = manager.prepare(WorkDirSpec{.worker = "llama"}, kNobody, kNogroup);
    ASSERT_TRUE(layout.ok());
    auto probe = testing::open_dir(layout->workdir);  // what systemd-tmpfiles does
    EXPECT_NE(::flock(probe.get(), LOCK_EX | LOCK_NB), 0);
    ASSERT_TRUE(manager.release("llama").ok());
    EXPECT_EQ(::flock(probe.get(), LOCK_EX | LOCK_NB), 0);
}

TEST_F(ManagerFixture, ExclusionFileFollowsTheSetOfProtectedDirs) {
    auto cache = root.path() / "cache-llama";
    ASSERT_TRUE(
        manager.prepare({.worker = "llama", .extra_dirs = {{cache, 0700, true}}}, kNobody, kNogroup)
            .ok());
    ASSERT_TRUE(manager.prepare({.worker = "whisper"}, kNobody, kNogroup).ok());
    std::string content = slurp(exclusion_file());
    EXPECT_NE(content.find("\nx " + (paths.state_dir / "workers/llama").string() + "\n"),
              std::string::npos)
        << content;
    EXPECT_NE(content.find("\nx " + cache.string() + "\n"), std::string::npos);
    EXPECT_NE(content.find("\nx " + (paths.state_dir / "workers/whisper").string() + "\n"),
              std::string::npos);

    ASSERT_TRUE(manager.release("llama").ok());
    content = slurp(exclusion_file());
    EXPECT_EQ(content.find("llama"), std::string::npos) << content;
    EXPECT_NE(content.find("workers/whisper"), std::string::npos);

    ASSERT_TRUE(manager.release("whisper").ok());
    EXPECT_FALSE(fs::exists(exclusion_file()));  // empty set: no file
}

TEST_F(ManagerFixture, StartUpWriteClearsAStaleFile) {
    root.write("tmpfiles.d/infervisor-workdirs.conf", "x /old/worker\n");
    ASSERT_TRUE(manager.write_tmpfiles_exclusions().ok());
    EXPECT_FALSE(fs::exists(exclusion_file()));
}

TEST_F(ManagerFixture, FailedPrepareKeepsThePreviousPreparation) {
    auto cache = root.path() / "cache-llama";
    WorkDirSpec spec{.worker = "llama"};
    ASSERT_TRUE(manager.prepare(spec, kNobody, kNogroup).ok());
    root.write("cache-llama", "a file where the dir should be");
    spec.extra_dirs = {{cache, 0700, true}};
    auto r = manager.prepare(spec, kNobody, kNogroup);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("not a directory"), std::string::npos)
        << r.error().message();
    ASSERT_NE(manager.find("llama"), nullptr);
    EXPECT_TRUE(manager.find("llama")->workdir.is_protected());
    EXPECT_TRUE(manager.find("llama")->extra_dirs.empty());
}

TEST_F(ManagerFixture, RemovesAWorkDirOnlyWhenReleased) {
    WorkDirSpec spec{.worker = "llama"};
    auto layout = manager.prepare(spec, kNobody, kNogroup);
    ASSERT_TRUE(layout.ok());
    root.write(layout->workdir.lexically_relative(root.path()) / "deep/er/file", "x");
    EXPECT_FALSE(manager.remove_workdir(spec, kNobody).ok());
    EXPECT_TRUE(fs::exists(layout->workdir));

    ASSERT_TRUE(manager.release("llama").ok());
    auto removed = manager.remove_workdir(spec, kNobody);
    ASSERT_TRUE(removed.ok()) << removed.error().message();
    EXPECT_FALSE(fs::exists(layout->workdir));
    EXPECT_TRUE(manager.remove_workdir(spec, kNobody).ok());  // already gone: fine
}

TEST_F(ManagerFixture, KeepsExtraDirsWhenRemovingAWorkDir) {
    auto cache = root.path() / "cache-llama";
    WorkDirSpec spec{.worker = "llama", .extra_dirs = {{cache, 0700, true}}};
    ASSERT_TRUE(manager.prepare(spec, kNobody, kNogroup).ok());
    ASSERT_TRUE(manager.release("llama").ok());
    ASSERT_TRUE(manager.remove_workdir(spec, kNobody).ok());
    EXPECT_TRUE(fs::is_directory(cache));
}

TEST_F(ManagerFixture, RefusesAWorkDirOwnedBySomeoneElse) {
    auto dir = root.mkdir("state/workers/llama");
    ASSERT_EQ(::chown(dir.c_str(), 12345, 12345), 0);
    ASSERT_EQ(::chmod((root.path() / "state").c_str(), 0755), 0);
    auto r = manager.prepare(WorkDirSpec{.worker = "llama"}, kNobody, kNogroup);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("owned by uid 12345"), std::string::npos)
        << r.error().message();
    EXPECT_EQ(lstat_of(dir).st_uid, 12345u);
}

}  // namespace
}  // namespace infervisor
