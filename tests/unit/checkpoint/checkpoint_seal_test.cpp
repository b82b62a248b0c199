// Sealing a finished checkpoint (issue 26 #9): the tree the worker wrote
// becomes root's before it is measured, so the worker can read it back but
// neither grow nor change it. The worker here is a real process running as
// an unprivileged uid (fork + setuid), on a real file system.
#include "checkpoint/checkpoint_seal.h"

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <functional>

#include "base/unique_fd.h"
#include "checkpoint/checkpoint_store.h"
#include "support/temp_dir.h"

namespace infervisor {
namespace {

namespace fs = std::filesystem;
using testing::slurp;
using testing::TempDir;

constexpr uid_t kSealWorkerUid = 65534;
constexpr gid_t kSealWorkerGid = 65534;

// Runs `step` in a child process as the worker's uid and gid; its exit code:
// 0 when `step` returned true.
int as_worker(const std::function<bool()>& step) {
    pid_t pid = ::fork();
    if (pid == 0) {
        if (::setgroups(0, nullptr) < 0 || ::setgid(kSealWorkerGid) < 0 ||
            ::setuid(kSealWorkerUid) < 0)
            ::_exit(2);
        ::_exit(step() ? 0 : 1);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 3;
}

bool write_as_is(const fs::path& path, const std::string& text, mode_t mode) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0) return false;
    bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    return ok && ::chmod(path.c_str(), mode) == 0;
}

struct stat lstat_at(const fs::path& path) {
    struct stat st {};
    EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
    return st;
}

class CheckpointSealTest : public ::testing::Test {
  protected:
    void SetUp() override {
        if (::geteuid() != 0) GTEST_SKIP() << "needs root (the worker is another uid)";
        auto store = CheckpointStore::open(root_, "llama");
        ASSERT_TRUE(store) << store.error().message();
        store_.emplace(std::move(*store));
        ASSERT_TRUE(store_->fresh_staging(kSealWorkerUid, kSealWorkerGid));
        ::chmod(dir_.path().c_str(), 0755);  // the worker reaches NAME (0711) through it
    }
    fs::path staging() const { return root_ / "llama/staging"; }
    fs::path incoming() const { return root_ / "llama/incoming"; }
    Result<void> take_and_seal() {
        if (auto r = store_->take_staging(); !r) return r;
        auto fd = store_->dup_dir();
        if (!fd) return fd.error();
        return CheckpointStore::seal_incoming(fd->get(), kSealWorkerUid, kSealWorkerUid);
    }

    TempDir dir_;
    fs::path root_ = dir_.path() / "checkpoints";
    std::optional<CheckpointStore> store_;
};

TEST_F(CheckpointSealTest, TheSealedTreeIsRootsAndTheWorkerCanOnlyReadIt) {
    ASSERT_EQ(as_worker([&] {
                  return ::mkdir((staging() / "kv").c_str(), 0777) == 0 &&
                         write_as_is(staging() / "kv/cache", "tokens", 0666) &&
                         write_as_is(staging() / "restore.sh", "#!/bin/sh\n", 06777);
              }),
              0);
    auto sealed = take_and_seal();
    ASSERT_TRUE(sealed) << sealed.error().message();

    for (const char* rel : {"", "kv", "kv/cache", "restore.sh"}) {
        auto st = lstat_at(incoming() / rel);
        EXPECT_EQ(st.st_uid, 0u) << rel;
        EXPECT_EQ(st.st_gid, 0u) << rel;
        // No set-id bits and nothing for others; the group bits are the ACL's
        // mask (read for the worker's uid at most, never write).
        EXPECT_EQ(st.st_mode & 07007, 0u) << rel;
        EXPECT_EQ(st.st_mode & S_IWGRP, 0u) << rel;
    }
    // The worker reads it back (its restore)...
    EXPECT_EQ(as_worker([&] {
                  return slurp(incoming() / "kv/cache") == "tokens" &&
                         ::access((incoming() / "restore.sh").c_str(), R_OK | X_OK) == 0;
              }),
              0);
    // ...and can neither write, add, remove, rename nor re-mode anything.
    EXPECT_EQ(as_worker([&] {
                  return ::open((incoming() / "kv/cache").c_str(), O_WRONLY | O_APPEND) < 0 &&
                         errno == EACCES;
              }),
              0);
    EXPECT_EQ(as_worker([&] {
                  return ::open((incoming() / "kv/more").c_str(), O_WRONLY | O_CREAT, 0600) < 0 &&
                         errno == EACCES;
              }),
              0);
    EXPECT_EQ(as_worker([&] { return ::unlink((incoming() / "kv/cache").c_str()) < 0; }), 0);
    EXPECT_EQ(as_worker([&] {
                  return ::rename((incoming() / "kv").c_str(), (incoming() / "kv2").c_str()) < 0;
              }),
              0);
    EXPECT_EQ(as_worker([&] {
                  return ::chmod((incoming() / "kv/cache").c_str(), 0666) < 0 && errno == EPERM;
              }),
              0);
    EXPECT_EQ(slurp(incoming() / "kv/cache"), "tokens");
}

// A descriptor opened for writing before the seal would still write after
// it (permissions are checked at open): such a checkpoint is refused.
TEST_F(CheckpointSealTest, AFileStillOpenForWritingIsRefused) {
    ASSERT_EQ(as_worker([&] { return write_as_is(staging() / "state", "half", 0600); }), 0);
    // Standing in for the worker's descriptor: any writer counts.
    UniqueFd writer(::open((staging() / "state").c_str(), O_WRONLY | O_APPEND | O_CLOEXEC));
    ASSERT_TRUE(writer);
    auto sealed = take_and_seal();
    ASSERT_FALSE(sealed);
    EXPECT_NE(sealed.error().message().find("still open for writing"), std::string::npos)
        << sealed.error().message();

    // The refused tree is deleted (worker_checkpoints.cpp); the next one,
    // written and closed, seals.
    writer.reset();
    ASSERT_TRUE(store_->discard_incoming());
    ASSERT_TRUE(store_->fresh_staging(kSealWorkerUid, kSealWorkerGid));
    ASSERT_EQ(as_worker([&] { return write_as_is(staging() / "state", "whole", 0600); }), 0);
    auto again = take_and_seal();
    EXPECT_TRUE(again) << again.error().message();
}

// A hard link to another uid's file (or anything the worker did not write)
// is not the worker's to checkpoint, and must not become root's 0700 with an
// ACL for the worker.
TEST_F(CheckpointSealTest, AnEntryOfAnotherUidIsRefusedAndLeftAsItWas) {
    ASSERT_EQ(as_worker([&] { return write_as_is(staging() / "state", "x", 0600); }), 0);
    fs::path foreign = staging() / "foreign";
    ASSERT_TRUE(write_as_is(foreign, "someone else's", 0644));
    ASSERT_EQ(::chown(foreign.c_str(), 1234, 1234), 0);
    auto sealed = take_and_seal();
    ASSERT_FALSE(sealed);
    EXPECT_NE(sealed.error().message().find("belongs to uid 1234"), std::string::npos)
        << sealed.error().message();
    auto st = lstat_at(incoming() / "foreign");
    EXPECT_EQ(st.st_uid, 1234u);
    EXPECT_EQ(st.st_mode & 07777, 0644u);
}

// A hard link to a file of root's that the worker may write (a group's
// shared file; or any file with fs.protected_hardlinks=0) is refused too: the
// seal must neither take it from its group nor give the worker read access
// through an ACL.
TEST_F(CheckpointSealTest, AnEntryOfRootsIsRefusedAndLeftAsItWas) {
    ASSERT_EQ(as_worker([&] { return write_as_is(staging() / "state", "x", 0600); }), 0);
    fs::path roots = staging() / "group-shared";
    ASSERT_TRUE(write_as_is(roots, "root's, shared with a group", 0660));
    ASSERT_EQ(::chown(roots.c_str(), 0, 44), 0);
    auto sealed = take_and_seal();
    ASSERT_FALSE(sealed);
    EXPECT_NE(sealed.error().message().find("belongs to uid 0"), std::string::npos)
        << sealed.error().message();
    auto st = lstat_at(incoming() / "group-shared");
    EXPECT_EQ(st.st_gid, 44u);
    EXPECT_EQ(st.st_mode & 07777, 0660u);
    EXPECT_LT(
        ::getxattr((incoming() / "group-shared").c_str(), "system.posix_acl_access", nullptr, 0),
        0);
}

TEST_F(CheckpointSealTest, SymlinksAreMadeRootsAndNeverFollowed) {
    TempDir victim;
    victim.write("passwd", "root:x:0:0\n");
    ASSERT_EQ(::chmod(victim.path().c_str(), 0755), 0);
    ASSERT_EQ(::chown((victim.path() / "passwd").c_str(), kSealWorkerUid, kSealWorkerGid), 0);
    ASSERT_EQ(as_worker([&] {
                  return write_as_is(staging() / "state", "x", 0600) &&
                         ::symlink(victim.path().c_str(), (staging() / "etc").c_str()) == 0 &&
                         ::symlink((victim.path() / "passwd").c_str(),
                                   (staging() / "passwd").c_str()) == 0;
              }),
              0);
    auto sealed = take_and_seal();
    ASSERT_TRUE(sealed) << sealed.error().message();
    EXPECT_EQ(lstat_at(incoming() / "etc").st_uid, 0u);
    EXPECT_EQ(lstat_at(incoming() / "passwd").st_uid, 0u);
    // What they point to is untouched (still the worker's, as it was).
    auto target = lstat_at(victim.path() / "passwd");
    EXPECT_EQ(target.st_uid, kSealWorkerUid);
    EXPECT_EQ(lstat_at(victim.path()).st_mode & 07777, 0755u);
    EXPECT_EQ(slurp(victim.path() / "passwd"), "root:x:0:0\n");
}

// criu images are root's already and only root (criu) reads them back.
TEST_F(CheckpointSealTest, ACriuImageIsSealedForRootAlone) {
    auto store = CheckpointStore::open(root_, "frozen");
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->fresh_staging(0, 0));
    dir_.write("checkpoints/frozen/staging/pages-1.img", "pages");
    ::chmod((root_ / "frozen/staging/pages-1.img").c_str(), 0644);
    ASSERT_TRUE(store->take_staging());
    auto sealed = CheckpointStore::seal_incoming(store->dup_dir()->get(), 0, 0);
    ASSERT_TRUE(sealed) << sealed.error().message();
    EXPECT_EQ(lstat_at(root_ / "frozen/incoming/pages-1.img").st_mode & 07777, 0600u);
    EXPECT_EQ(as_worker([&] {
                  return ::open((root_ / "frozen/incoming/pages-1.img").c_str(), O_RDONLY) < 0;
              }),
              0);
}

}  // namespace
}  // namespace infervisor
