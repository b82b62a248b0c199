#include "process/proc_stat.h"

#include <gtest/gtest.h>
#include <unistd.h>

namespace infervisor {
namespace {

TEST(ProcStat, StateParentAndStartTimeAreCountedAfterTheCommandName) {
    // A command name with spaces and parentheses must not shift the fields.
    std::string line =
        "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 987654 12345 67 "
        "18446744073709551615\n";
    auto t = parse_proc_stat(line);
    ASSERT_TRUE(t.ok()) << t.error().message();
    EXPECT_EQ(t->start_time, 987654u);
    EXPECT_EQ(t->state, 'S');
    EXPECT_EQ(t->ppid, 1);
    EXPECT_FALSE(parse_proc_stat("4242 (x) S 1 2 3").ok());
    EXPECT_FALSE(parse_proc_stat("no parenthesis").ok());
    EXPECT_FALSE(parse_proc_stat("1 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 12y 0").ok());
}

TEST(ProcStat, OwnStartTimeIsStableAndAGonePidIsENOENT) {
    auto a = process_start_time("/proc", ::getpid());
    auto b = process_start_time("/proc", ::getpid());
    ASSERT_TRUE(a.ok()) << a.error().message();
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(*a, *b);
    EXPECT_GT(*a, 0u);
    auto own = read_proc_stat("/proc", ::getpid());
    ASSERT_TRUE(own.ok());
    EXPECT_EQ(own->ppid, ::getppid());
    auto gone = process_start_time("/proc", 0x3fffffff);
    ASSERT_FALSE(gone.ok());
    EXPECT_EQ(gone.error().code, ENOENT);
}

}  // namespace
}  // namespace infervisor
