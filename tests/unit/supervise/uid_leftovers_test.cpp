// A removed worker's own uid is handed on only when nothing it owned is
// left (supervise/uid_leftovers.h). Issue 26, defects 3 and 4.
#include "supervise/uid_leftovers.h"

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/temp_dir.h"

namespace infervisor {
namespace {

using testing::TempDir;
namespace fs = std::filesystem;

constexpr uid_t kGone = 61150;   // the removed worker's uid
constexpr uid_t kOther = 61151;  // someone else's

class UidLeftovers : public ::testing::Test {
  protected:
    void SetUp() override {
        if (::geteuid() != 0) GTEST_SKIP() << "files of other uids need root";
        paths_.state_dir = dir_.path() / "state";
        fs::create_directories(paths_.state_dir / "checkpoints" / "gone" / "0000000001");
        dir_.write("state/checkpoints/gone/0000000001/kv-cache", "prompts");
        dir_.write("state/checkpoints/kept/x", "another worker's");
    }
    fs::path owned(const std::string& rel, uid_t uid, bool dir = false) {
        fs::path p = dir ? dir_.mkdir(rel) : dir_.write(rel, "x");
        EXPECT_EQ(::lchown(p.c_str(), uid, uid), 0);
        return p;
    }
    TempDir dir_;
    Paths paths_;
};

TEST_F(UidLeftovers, CheckpointsAndTheUidsTempEntriesGoAndNothingElse) {
    auto shm = dir_.mkdir("shm");
    owned("shm/gone-segment", kGone);
    owned("shm/gone-dir", kGone, true);
    owned("shm/gone-dir/inner", kGone);
    owned("shm/others", kOther);
    auto result =
        clean_up_after_uid(paths_, "gone", kGone, {}, {shm, dir_.path() / "absent"}, false);
    EXPECT_TRUE(result.errors.empty()) << result.errors.front();
    EXPECT_TRUE(result.checkpoints_removed);
    EXPECT_FALSE(fs::exists(paths_.state_dir / "checkpoints/gone"));
    EXPECT_TRUE(fs::exists(paths_.state_dir / "checkpoints/kept/x"));
    EXPECT_EQ(result.temp_entries_removed, 2u);
    EXPECT_FALSE(fs::exists(shm / "gone-segment"));
    EXPECT_FALSE(fs::exists(shm / "gone-dir"));
    EXPECT_TRUE(fs::exists(shm / "others"));
    EXPECT_TRUE(result.uid_may_be_freed());
}

TEST_F(UidLeftovers, TheUidStaysReservedWhileADirItOwnedExists) {
    auto custom = owned("srv-llama", kGone, true);
    auto extra = owned("models", kGone, true);
    auto handed_back = owned("handed-back", 0, true);  // chowned to root by the admin
    OwnedDirs dirs{custom, {extra, handed_back, dir_.path() / "deleted"}};
    auto result = clean_up_after_uid(paths_, "gone", kGone, dirs, {}, false);
    EXPECT_EQ(result.still_owned, (std::vector<fs::path>{custom, extra}));
    EXPECT_FALSE(result.uid_may_be_freed());
    fs::remove_all(custom);
    fs::remove_all(extra);
    EXPECT_TRUE(clean_up_after_uid(paths_, "gone", kGone, dirs, {}, false).uid_may_be_freed());
}

TEST_F(UidLeftovers, WhatADaemonRecordedIsKnownToTheNextOne) {
    OwnedDirs dirs{"/srv/llama", {"/srv/models", "/var/cache/hf"}};
    ASSERT_TRUE(record_owned_dirs(paths_, "gone", dirs).ok());
    EXPECT_EQ(recorded_owned_dirs(paths_, "gone"), dirs);
    struct stat st;
    ASSERT_EQ(::stat((paths_.state_dir / "dynamic-user-dirs/gone").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u);
    forget_owned_dirs(paths_, "gone");
    EXPECT_EQ(recorded_owned_dirs(paths_, "gone"), OwnedDirs{});
    EXPECT_FALSE(record_owned_dirs(paths_, "../x", dirs).ok());
}

// SysV shared memory a worker created stays in the kernel after it exits,
// with its uid: another worker given that uid could attach it.
TEST_F(UidLeftovers, TheUidsSysVSharedMemoryIsRemoved) {
    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    pid_t pid = ::fork();
    if (pid == 0) {
        if (::setgroups(0, nullptr) < 0 || ::setresgid(kGone, kGone, kGone) < 0 ||
            ::setresuid(kGone, kGone, kGone) < 0)
            ::_exit(100);
        int id = ::shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
        ssize_t ignored = ::write(pipe_fds[1], &id, sizeof id);
        (void)ignored;
        ::_exit(id >= 0 ? 0 : 1);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    int id = -1;
    ASSERT_EQ(::read(pipe_fds[0], &id, sizeof id), static_cast<ssize_t>(sizeof id));
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    ASSERT_GE(id, 0) << "shmget failed in the child";
    shmid_ds ds{};
    ASSERT_EQ(::shmctl(id, IPC_STAT, &ds), 0);
    auto result = clean_up_after_uid(paths_, "gone", kGone, {}, {}, true);
    EXPECT_GE(result.ipc_objects_removed, 1u);
    EXPECT_EQ(::shmctl(id, IPC_STAT, &ds), -1);  // gone
}

TEST_F(UidLeftovers, NeverCleansUpAfterRoot) {
    auto shm = dir_.mkdir("shm");
    owned("shm/roots", 0);
    auto result = clean_up_after_uid(paths_, "gone", 0, {}, {shm}, false);
    EXPECT_FALSE(result.uid_may_be_freed());
    EXPECT_TRUE(fs::exists(shm / "roots"));
}

}  // namespace
}  // namespace infervisor
