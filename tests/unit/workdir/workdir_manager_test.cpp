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

// A worker switching users (e.g. from the shared infervisor-worker to a uid
// of its own): its default work dir is the daemon's and follows it, with
// what it wrote under the old uid; nothing else changes hands.
TEST_F(ManagerFixture, HandsItsOwnWorkDirOverWhenTheWorkerChangesUid) {
    constexpr uid_t kOld = 12345;
    auto dir = root.mkdir("state/workers/llama");
    auto sub = root.mkdir("state/workers/llama/models");
    auto model = root.write("state/workers/llama/models/model.bin", "weights");
    auto foreign = root.write("state/workers/llama/foreign", "someone else's");
    auto linked = root.write("elsewhere", "hard-linked in by a worker sharing the old uid");
    ASSERT_EQ(::link(linked.c_str(), (dir / "linked").c_str()), 0);
    ASSERT_EQ(::symlink("/etc/passwd", (dir / "link").c_str()), 0);
    for (const auto& p : {dir, sub, model, linked}) ASSERT_EQ(::lchown(p.c_str(), kOld, kOld), 0);
    ASSERT_EQ(::lchown((dir / "link").c_str(), kOld, kOld), 0);
    ASSERT_EQ(::chown(foreign.c_str(), 4242, 4242), 0);

    auto r = manager.prepare(WorkDirSpec{.worker = "llama"}, kNobody, kNogroup);
    ASSERT_TRUE(r.ok()) << r.error().message();
    for (const auto& p : {dir, sub, model, dir / "link", dir / "tmp"})
        EXPECT_EQ(lstat_of(p).st_uid, kNobody) << p;
    EXPECT_EQ(lstat_of(model).st_gid, kNogroup);
    EXPECT_EQ(lstat_of(foreign).st_uid, 4242u);     // not the old uid's: untouched
    EXPECT_EQ(lstat_of(linked).st_uid, kOld);       // two links: could be another's
    EXPECT_EQ(lstat_of("/etc/passwd").st_uid, 0u);  // a symlink is never followed
}

// Issue 10, defect 5: an existing directory the daemon did not create is
// not handed over (seen: /var/lib/dpkg chowned to a worker).
TEST_F(ManagerFixture, RefusesAnExistingDirItDidNotCreate) {
    auto existing = root.mkdir("srv/system-owned");
    auto before = lstat_of(existing);
    WorkDirSpec spec{.worker = "llama", .extra_dirs = {{existing, 0700, true}}};
    auto r = manager.prepare(spec, kNobody, kNogroup);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("was not created by infervisord"), std::string::npos)
        << r.error().message();
    EXPECT_NE(r.error().message().find("adopt: true"), std::string::npos);
    auto after = lstat_of(existing);
    EXPECT_EQ(after.st_uid, before.st_uid);
    EXPECT_EQ(after.st_mode, before.st_mode);

    WorkDirSpec custom{.worker = "llama", .workdir = existing};
    EXPECT_FALSE(manager.prepare(custom, kNobody, kNogroup).ok());
    EXPECT_EQ(lstat_of(existing).st_uid, before.st_uid);
}

TEST_F(ManagerFixture, AdoptsAnExistingDirWhenMarkedAdoptable) {
    auto existing = root.mkdir("srv/models");
    auto weights = root.write("srv/models/weights", "root's");
    WorkDirSpec spec{.worker = "llama", .extra_dirs = {{existing, 0750, true, true}}};
    auto r = manager.prepare(spec, kNobody, kNogroup);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(lstat_of(existing).st_uid, kNobody);
    EXPECT_EQ(lstat_of(weights).st_uid, 0u);  // taken from root: contents stay as they are

    WorkDirSpec custom{.worker = "other", .workdir = root.mkdir("srv/work"), .adopt_workdir = true};
    ASSERT_TRUE(manager.prepare(custom, kNobody, kNogroup).ok());
    EXPECT_EQ(lstat_of(root.path() / "srv/work").st_uid, kNobody);
}

TEST_F(ManagerFixture, RefusesToAdoptAUsersDirInAWorldWritableDir) {
    auto open = root.mkdir("shared");
    ASSERT_EQ(::chmod(open.c_str(), 01777), 0);
    auto squatted = root.mkdir("shared/cache");
    ASSERT_EQ(::chown(squatted.c_str(), 4242, 4242), 0);
    WorkDirSpec spec{.worker = "llama", .extra_dirs = {{squatted, 0700, true, true}}};
    auto r = manager.prepare(spec, kNobody, kNogroup);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("anyone could have made it"), std::string::npos)
        << r.error().message();
    EXPECT_EQ(lstat_of(squatted).st_uid, 4242u);
}

// A directory the daemon created carries its marker, so it follows the
// worker to a new uid even outside the state dir.
TEST_F(ManagerFixture, ADirItCreatedFollowsTheWorkerToANewUid) {
    auto cache = root.path() / "srv" / "llama-cache";
    WorkDirSpec spec{.worker = "llama", .extra_dirs = {{cache, 0700, true}}};
    ASSERT_TRUE(manager.prepare(spec, 12345, 12345).ok());
    root.write("srv/llama-cache/blob", "downloaded");
    ASSERT_EQ(::chown((cache / "blob").c_str(), 12345, 12345), 0);
    ASSERT_TRUE(manager.release("llama").ok());

    auto r = manager.prepare(spec, kNobody, kNogroup);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(lstat_of(cache).st_uid, kNobody);
    EXPECT_EQ(lstat_of(cache / "blob").st_uid, kNobody);

    // Another worker's marker is not this worker's.
    WorkDirSpec thief{.worker = "thief", .extra_dirs = {{cache, 0700, true}}};
    ASSERT_TRUE(manager.release("llama").ok());
    EXPECT_FALSE(manager.prepare(thief, 4242, 4242).ok());
    EXPECT_EQ(lstat_of(cache).st_uid, kNobody);
}

}  // namespace
}  // namespace infervisor
