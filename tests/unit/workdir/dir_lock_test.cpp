#include "workdir/dir_lock.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>

#include "support/temp_dir.h"
#include "workdir_test_support.h"

namespace infervisor {
namespace {

using testing::TempDir;

TEST(DirLock, MakesTheExclusiveProbeOfTmpfilesFail) {
    TempDir dir;
    auto fd = testing::open_dir(dir.path());
    auto lock = DirLock::acquire(fd.get(), dir.path());
    ASSERT_TRUE(lock.ok()) << lock.error().message();
    EXPECT_TRUE(lock->held());

    auto probe = testing::open_dir(dir.path());
    EXPECT_NE(::flock(probe.get(), LOCK_EX | LOCK_NB), 0);
    EXPECT_EQ(errno, EWOULDBLOCK);

    lock->release();
    EXPECT_FALSE(lock->held());
    EXPECT_EQ(::flock(probe.get(), LOCK_EX | LOCK_NB), 0);
}

TEST(DirLock, DoesNotConflictWithOtherSharedLocks) {
    TempDir dir;
    auto fd = testing::open_dir(dir.path());
    auto first = DirLock::acquire(fd.get(), dir.path());
    auto second = DirLock::acquire(fd.get(), dir.path());  // e.g. prepare() again
    ASSERT_TRUE(first.ok());
    ASSERT_TRUE(second.ok());
    auto worker = testing::open_dir(dir.path());
    EXPECT_EQ(::flock(worker.get(), LOCK_SH | LOCK_NB), 0);

    first->release();  // the other holder still keeps tmpfiles out
    auto probe = testing::open_dir(dir.path());
    EXPECT_NE(::flock(probe.get(), LOCK_EX | LOCK_NB), 0);
}

TEST(DirLock, FailsWithoutWaitingWhileSomeoneHoldsItExclusively) {
    TempDir dir;
    auto cleaner = testing::open_dir(dir.path());  // tmpfiles in the middle of a run
    ASSERT_EQ(::flock(cleaner.get(), LOCK_EX | LOCK_NB), 0);
    auto fd = testing::open_dir(dir.path());
    auto lock = DirLock::acquire(fd.get(), dir.path());
    ASSERT_FALSE(lock.ok());
    EXPECT_EQ(lock.error().code, EWOULDBLOCK);
}

TEST(DirLock, WorksFromAnOPathDescriptor) {
    TempDir dir;
    UniqueFd path_fd(::open(dir.path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    auto lock = DirLock::acquire(path_fd.get(), dir.path());
    ASSERT_TRUE(lock.ok()) << lock.error().message();
    auto probe = testing::open_dir(dir.path());
    EXPECT_NE(::flock(probe.get(), LOCK_EX | LOCK_NB), 0);
}

}  // namespace
}  // namespace infervisor
