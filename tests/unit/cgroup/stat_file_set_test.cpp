#include "cgroup/stat_file_set.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <string>
#include <vector>

#include "cgroup/cgroup_stats.h"
#include "support/temp_dir.h"

namespace infervisor {
namespace {

using testing::TempDir;

// Rewrites `name` in place (same inode), as the kernel's files change under
// a held descriptor.
void rewrite(const TempDir& dir, const std::string& name, const std::string& text) {
    std::ofstream(dir.path() / name, std::ios::trunc) << text;
}

TEST(StatFileSet, ReadsTheWholeCurrentTextThroughOneHeldDescriptorPerFile) {
    TempDir dir;
    dir.write("memory.current", "4096\n");
    dir.write("memory.stat", "anon 1\nfile 2\n");
    StatFileSet files(dir.path());
    EXPECT_EQ(*files.read("memory.current"), "4096\n");
    EXPECT_EQ(*files.read("memory.stat"), "anon 1\nfile 2\n");
    EXPECT_EQ(files.held(), 2u);
    rewrite(dir, "memory.current", "8192\n");
    EXPECT_EQ(*files.read("memory.current"), "8192\n") << "read afresh from offset 0";
    EXPECT_EQ(files.held(), 2u) << "no second descriptor for a file read again";
}

TEST(StatFileSet, ReadsATextLongerThanItsFirstBufferWhole) {
    TempDir dir;
    std::string text;
    for (int i = 0; text.size() < 20000; ++i) text += "counter_" + std::to_string(i) + " 1\n";
    dir.write("memory.stat", text);
    StatFileSet files(dir.path());
    EXPECT_EQ(*files.read("memory.stat"), text);
}

TEST(StatFileSet, ReadsAfterALargeTextAndAShortOneAreEachWholeAndOnlyTheirOwn) {
    // The shared buffer keeps what it grew to (up to a bound) and is never
    // cleared between reads: each read's text must still be exactly its file.
    TempDir dir;
    std::string large(200'000, 'x');
    std::string middle(6000, 'y');
    dir.write("large", large);
    dir.write("middle", middle);
    dir.write("short", "12\n");
    StatFileSet files(dir.path());
    EXPECT_EQ(*files.read("middle"), middle);
    EXPECT_EQ(*files.read("short"), "12\n");
    EXPECT_EQ(*files.read("large"), large);
    EXPECT_EQ(*files.read("short"), "12\n") << "after the buffer was given back";
    EXPECT_EQ(*files.read("middle"), middle);
    dir.write("empty", "");
    EXPECT_EQ(*files.read("empty"), "");
}

TEST(StatFileSet, AMissingFileIsENOENTUntilItAppears) {
    TempDir dir;
    StatFileSet files(dir.path());
    auto missing = files.read("memory.swap.current");
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().code, ENOENT);
    EXPECT_EQ(files.held(), 0u);
    dir.write("memory.swap.current", "0\n");
    EXPECT_EQ(*files.read("memory.swap.current"), "0\n");
}

TEST(StatFileSet, CloseAllLetsGoOfEveryDescriptorAndReadsReopen) {
    TempDir dir;
    dir.write("cpu.stat", "usage_usec 5\n");
    StatFileSet files(dir.path());
    ASSERT_TRUE(files.read("cpu.stat"));
    files.close_all();
    EXPECT_EQ(files.held(), 0u);
    EXPECT_EQ(*files.read("cpu.stat"), "usage_usec 5\n");
}

TEST(StatFileSet, NeverFollowsASymlinkPlantedForAFile) {
    TempDir dir;
    dir.write("secret", "root's\n");
    ASSERT_EQ(::symlink((dir.path() / "secret").c_str(), (dir.path() / "memory.current").c_str()),
              0);
    StatFileSet files(dir.path());
    auto text = files.read("memory.current");
    ASSERT_FALSE(text);
    EXPECT_EQ(text.error().code, ELOOP);
}

TEST(StatFileSet, HoldsNothingWithinTheReserveBelowTheDescriptorLimit) {
    TempDir dir;
    dir.write("memory.current", "4096\n");
    // In a child: the test process keeps its own limit.
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        rlimit limit{};
        ::getrlimit(RLIMIT_NOFILE, &limit);
        int lowest_free = ::open("/dev/null", O_RDONLY);
        ::close(lowest_free);
        limit.rlim_cur = static_cast<rlim_t>(lowest_free) + kFdReserve;  // no room to hold
        if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) ::_exit(10);
        StatFileSet files(dir.path());
        auto text = files.read("memory.current");
        if (!text || *text != "4096\n") ::_exit(11);
        if (files.held() != 0) ::_exit(12);
        rewrite(dir, "memory.current", "1\n");
        text = files.read("memory.current");
        if (!text || *text != "1\n") ::_exit(13);
        limit.rlim_cur = static_cast<rlim_t>(lowest_free) + kFdReserve + 8;  // room now
        if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) ::_exit(14);
        if (!files.read("memory.current") || files.held() != 1) ::_exit(15);
        ::_exit(0);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "10: setrlimit, 11-13: read within the reserve, "
                                         "14: setrlimit, 15: held once there is room";
}

TEST(CgroupStats, ReadsThroughAHeldSetAsByPath) {
    TempDir dir;
    dir.write("memory.current", "4096\n");
    dir.write("memory.events", "low 0\nhigh 7\nmax 2\noom 1\noom_kill 1\n");
    dir.write("memory.pressure", "some avg10=1.50 avg60=0.00 avg300=0.00 total=10\n");
    StatFileSet held(dir.path());
    CgroupStats stats(held);
    EXPECT_EQ(*stats.memory_current(), std::optional<uint64_t>(4096));
    EXPECT_EQ(*stats.memory_events(), (MemoryEvents{0, 7, 2, 1, 1, 0}));
    EXPECT_DOUBLE_EQ(stats.memory_pressure()->some.avg10, 1.5);
    EXPECT_EQ(held.held(), 3u);
    rewrite(dir, "memory.current", "12x\n");
    auto bad = stats.memory_current();
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message().find((dir.path() / "memory.current").string()),
              std::string::npos)
        << "a parse error names the file: " << bad.error().message();
    EXPECT_EQ(stats.memory_max().error().code, ENOENT);
}

}  // namespace
}  // namespace infervisor
