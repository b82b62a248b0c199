#include "process/dynamic_users.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <ctime>
#include <set>

#include "support/temp_dir.h"

namespace infervisor {
namespace {

using testing::TempDir;

TEST(DynamicUsers, TheRangeAvoidsSystemdsDynamicUsersAndRegularUsers) {
    EXPECT_GT(kDynamicUidFirst, 60000u);  // regular users (login.defs UID_MAX)
    EXPECT_LT(kDynamicUidLast, 61184u);   // systemd's DynamicUser= range starts here
    EXPECT_LT(kDynamicUidLast, 65534u);   // nobody; 16-bit safe
}

TEST(DynamicUsers, EachWorkerGetsItsOwnUidKeptAcrossRestarts) {
    TempDir dir;
    DynamicUsers users(dir.path() / "dynamic-users");
    auto a = users.acquire("a");
    auto b = users.acquire("b");
    ASSERT_TRUE(a.ok()) << a.error().message();
    ASSERT_TRUE(b.ok()) << b.error().message();
    EXPECT_NE(*a, *b);
    EXPECT_GE(*a, kDynamicUidFirst);
    EXPECT_LE(*b, kDynamicUidLast);
    EXPECT_EQ(*users.acquire("a"), *a);

    DynamicUsers after_restart(dir.path() / "dynamic-users");  // a new daemon
    EXPECT_EQ(after_restart.lookup("a"), *a);
    EXPECT_EQ(*after_restart.acquire("b"), *b);
    struct stat st;
    ASSERT_EQ(::stat((dir.path() / "dynamic-users").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0700u);
}

TEST(DynamicUsers, SkipsNumbersTheHostKnowsAndReusesOnlyReleasedOnes) {
    TempDir dir;
    std::set<uid_t> host = {100, 102};
    DynamicUsers users(dir.path() / "u", 100, 104, [&](uid_t id) { return host.count(id) > 0; });
    EXPECT_EQ(*users.acquire("a"), 101u);
    EXPECT_EQ(*users.acquire("b"), 103u);
    EXPECT_EQ(*users.acquire("c"), 104u);
    auto full = users.acquire("d");
    ASSERT_FALSE(full.ok());
    EXPECT_NE(full.error().message().find("no free uid left in 100-104"), std::string::npos);

    EXPECT_EQ(users.lookup("d"), std::nullopt);  // lookup never allocates
    ASSERT_TRUE(users.release("b").ok());
    EXPECT_EQ(users.lookup("b"), std::nullopt);
    EXPECT_EQ(*users.acquire("d"), 103u);
    EXPECT_TRUE(users.release("never-had-one").ok());
    auto all = users.list();
    ASSERT_TRUE(all.ok());
    EXPECT_EQ(all->size(), 3u);
}

TEST(DynamicUsers, RefusesNamesThatAreNotFileNames) {
    TempDir dir;
    DynamicUsers users(dir.path() / "u");
    for (const char* bad : {"", ".", "..", ".hidden", "a/b"}) EXPECT_FALSE(users.acquire(bad).ok());
}

TEST(DynamicUsers, IgnoresGarbageAndOutOfRangeFiles) {
    TempDir dir;
    dir.write("u/a", "not a number\n");
    dir.write("u/b", "0\n");  // root: never handed out from a tampered file
    DynamicUsers users(dir.path() / "u", 100, 101, [](uid_t) { return false; });
    EXPECT_EQ(users.lookup("b"), std::nullopt);
    EXPECT_EQ(*users.acquire("b"), 100u);
    EXPECT_EQ(*users.acquire("a"), 101u);
}

// Issue 26, defect 10: the userdb socket (0666) read one file per dynamic
// worker for every request of any local user. The cache reads them again
// only when the store's directory has changed.
TEST(DynamicUsersCache, ReadsTheStoreOnlyWhenItHasChanged) {
    TempDir dir;
    DynamicUsers users(dir.path() / "store", 70000, 70010, [](uid_t) { return false; });
    ASSERT_TRUE(users.acquire("a").ok());
    auto age_store = [&] {  // as if the last change were 10 s ago
        timespec old[2] = {{0, UTIME_OMIT}, {::time(nullptr) - 10, 0}};
        ASSERT_EQ(::utimensat(AT_FDCWD, (dir.path() / "store").c_str(), old, 0), 0);
    };
    age_store();
    DynamicUsersCache cache(users);
    EXPECT_EQ(cache.list()->size(), 1u);
    EXPECT_EQ(cache.list()->size(), 1u);
    EXPECT_EQ(cache.reads(), 1u);  // unchanged: not read again

    ASSERT_TRUE(users.acquire("b").ok());
    EXPECT_EQ(cache.list()->count("b"), 1u);
    EXPECT_EQ(cache.reads(), 2u);
    (void)cache.list();  // changed just now: another change could hide in the same tick
    EXPECT_EQ(cache.reads(), 3u);
    age_store();
    (void)cache.list();
    (void)cache.list();
    EXPECT_EQ(cache.reads(), 4u);

    ASSERT_TRUE(users.release("a").ok());
    EXPECT_EQ(cache.list()->count("a"), 0u);
    EXPECT_EQ(cache.reads(), 5u);
}

}  // namespace
}  // namespace infervisor
