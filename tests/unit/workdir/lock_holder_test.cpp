#include "workdir/lock_holder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "support/flock_holder.h"
#include "support/temp_dir.h"
#include "workdir/dir_lock.h"
#include "workdir_test_support.h"

namespace infervisor {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

TEST(LockHolder, FindsTheFlockLineOfTheFileSkippingWaitersAndPosixLocks) {
    const char* locks =
        "1: POSIX  ADVISORY  WRITE 10 fe:00:77 0 EOF\n"
        "2: FLOCK  ADVISORY  WRITE 11 fe:01:77 0 EOF\n"
        "3: -> FLOCK  ADVISORY  WRITE 12 fe:00:77 0 EOF\n"
        "3: FLOCK  ADVISORY  WRITE 13 fe:00:77 0 EOF\n";
    EXPECT_EQ(find_flock_pid(locks, makedev(0xfe, 0), 77), 13);
    EXPECT_EQ(find_flock_pid(locks, makedev(0xfe, 1), 77), 11);
    EXPECT_EQ(find_flock_pid(locks, makedev(0xfe, 0), 78), std::nullopt);
    EXPECT_EQ(find_flock_pid("garbage\n\n1: FLOCK\n", makedev(0xfe, 0), 77), std::nullopt);
}

TEST(LockHolder, NamesARealHolderByPidAndCommand) {
    TempDir dir;
    testing::FlockHolder holder(dir.path());
    struct stat st = testing::lstat_of(dir.path());
    auto found = find_lock_holder("/proc", st.st_dev, st.st_ino);
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(found->pid, holder.pid());
    EXPECT_FALSE(found->command.empty());
    EXPECT_THAT(found->describe(), HasSubstr("pid " + std::to_string(holder.pid()) + " ("));
}

TEST(DirLock, ABusyLockNamesItsHolder) {
    TempDir dir;
    testing::FlockHolder holder(dir.path());
    auto fd = testing::open_dir(dir.path());
    auto lock = DirLock::acquire(fd.get(), dir.path());
    ASSERT_FALSE(lock.ok());
    EXPECT_EQ(lock.error().code, EWOULDBLOCK);
    EXPECT_THAT(lock.error().what,
                HasSubstr("held exclusively by pid " + std::to_string(holder.pid())));
    holder.release();
    EXPECT_TRUE(DirLock::acquire(fd.get(), dir.path()).ok());
}

}  // namespace
}  // namespace infervisor
