// Placement of spawned processes into a real cgroup2 directory of this host.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <iostream>

#include "process/pidfd.h"
#include "process/spawn.h"
#include "spawn_support.h"
#include "support/temp_dir.h"

namespace infervisor {
namespace {

using testing::TestCgroup;

#define CREATE_TEST_CGROUP_OR_SKIP(var)            \
    std::string why_no_cgroup;                     \
    auto var = TestCgroup::create(&why_no_cgroup); \
    if (!var) GTEST_SKIP() << why_no_cgroup

SpawnRequest cat_own_cgroup(int cgroup_fd) {
    SpawnRequest request;
    request.argv = {"/bin/cat", "/proc/self/cgroup"};
    request.cgroup_fd = cgroup_fd;
    return request;
}

std::string cgroup2_line(const std::string& proc_cgroup) {
    size_t at = proc_cgroup.find("0::");
    if (at == std::string::npos) return "";
    return proc_cgroup.substr(at, proc_cgroup.find('\n', at) - at);
}

TEST(CgroupPlacement, ChildIsBornInsideItsCgroup) {
    CREATE_TEST_CGROUP_OR_SKIP(cgroup);
    auto spawned = spawn_process(cat_own_cgroup(cgroup->fd()));
    ASSERT_TRUE(spawned.ok()) << spawned.error().message();
    std::cout << "[ info ] placement: "
              << (spawned->born_in_cgroup ? "clone3(CLONE_INTO_CGROUP)"
                                          : "fallback (child wrote cgroup.procs)")
              << "\n";
    ASSERT_TRUE(wait_for_exit(spawned->pidfd.get()).ok());

    auto finished = testing::run_captured(cat_own_cgroup(cgroup->fd()));
    ASSERT_TRUE(finished);
    EXPECT_EQ(cgroup2_line(finished->output), "0::" + cgroup->relative());
}

TEST(CgroupPlacement, FallbackChildMovesItselfBeforeExec) {
    CREATE_TEST_CGROUP_OR_SKIP(cgroup);
    SpawnRequest request = cat_own_cgroup(cgroup->fd());
    request.allow_clone_into_cgroup = false;
    testing::Pipe out = testing::make_pipe();
    request.stdout_fd = out.write.get();
    auto spawned = spawn_process(request);
    ASSERT_TRUE(spawned.ok()) << spawned.error().message();
    out.write.reset();
    EXPECT_FALSE(spawned->born_in_cgroup);
    testing::LineReader reader(std::move(out.read));
    EXPECT_EQ(reader.line_containing("0::"), "0::" + cgroup->relative());
    ASSERT_TRUE(wait_for_exit(spawned->pidfd.get()).ok());
}

TEST(CgroupPlacement, ARemovedCgroupIsAnError) {
    CREATE_TEST_CGROUP_OR_SKIP(cgroup);
    ASSERT_EQ(::rmdir(cgroup->path().c_str()), 0);
    auto spawned = spawn_process(cat_own_cgroup(cgroup->fd()));
    ASSERT_FALSE(spawned.ok());
    EXPECT_EQ(spawned.error().code, ENOENT);
    EXPECT_EQ(spawned.error().message(),
              "spawn /bin/cat: clone3 into cgroup: No such file or directory");

    SpawnRequest fallback = cat_own_cgroup(cgroup->fd());
    fallback.allow_clone_into_cgroup = false;
    spawned = spawn_process(fallback);
    ASSERT_FALSE(spawned.ok());
    EXPECT_EQ(spawned.error().message(),
              "spawn /bin/cat: open cgroup.procs of the target cgroup: No such file or directory");
}

TEST(CgroupPlacement, ADirectoryThatIsNoCgroupFailsHard) {
    testing::TempDir dir;
    UniqueFd not_a_cgroup(::open(dir.path().c_str(), O_DIRECTORY | O_PATH | O_CLOEXEC));
    ASSERT_TRUE(not_a_cgroup.valid());
    auto spawned = spawn_process(cat_own_cgroup(not_a_cgroup.get()));
    ASSERT_FALSE(spawned.ok());
    EXPECT_EQ(spawned.error().code, ENOENT);
    EXPECT_EQ(spawned.error().message(),
              "spawn /bin/cat: open cgroup.procs of the target cgroup: No such file or directory");
}

// The supervisor's promise: whatever a worker leaves behind inside its cgroup,
// killing the cgroup removes it.
TEST(CgroupPlacement, DoubleForkedOrphanStaysInTheCgroupUntilItIsKilled) {
    std::string worker = testing::example_worker_path();
    if (worker.empty()) GTEST_SKIP() << "INFERVISOR_EXAMPLE_WORKER is not set";
    CREATE_TEST_CGROUP_OR_SKIP(cgroup);
    SpawnRequest request;
    request.argv = {worker, "--name", "orphaner", "--double-fork", "--serve-interval-ms", "50"};
    request.cgroup_fd = cgroup->fd();
    testing::Pipe out = testing::make_pipe();
    request.stdout_fd = out.write.get();
    auto spawned = spawn_process(request);
    ASSERT_TRUE(spawned.ok()) << spawned.error().message();
    out.write.reset();
    testing::LineReader reader(std::move(out.read));
    auto orphan_line = reader.line_containing("orphan grandchild pid ");
    ASSERT_TRUE(orphan_line);
    pid_t orphan = std::stoi(orphan_line->substr(orphan_line->find(" pid ") + 5));
    auto opened = open_pidfd(orphan);
    ASSERT_TRUE(opened.ok()) << opened.error().message();
    UniqueFd orphan_pidfd = std::move(opened).value();
    EXPECT_EQ(testing::cgroup2_path_of(orphan), cgroup->relative());

    ASSERT_TRUE(send_signal(spawned->pidfd.get(), SIGKILL).ok());
    ASSERT_TRUE(wait_for_exit(spawned->pidfd.get()).ok());
    ASSERT_TRUE(send_signal(orphan_pidfd.get(), SIGTERM).ok());  // ignored
    EXPECT_TRUE(send_signal(orphan_pidfd.get(), 0).ok()) << "orphan should have survived";

    cgroup->kill_all();
    pollfd p{orphan_pidfd.get(), POLLIN, 0};  // readable once it has exited
    ASSERT_EQ(::poll(&p, 1, -1), 1);
    EXPECT_EQ(reader.line_containing("never printed"), std::nullopt);  // all writers gone: EOF
}

}  // namespace
}  // namespace infervisor
