// Against this host's real cgroup2 hierarchy. Our development machines mount
// cgroup2 without the memory controller, but cgroup.kill, cgroup.events and
// cgroup.procs work there, and those are what stopping a worker relies on.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cgroup/cgroup_dir.h"
#include "cgroup/cgroup_discovery.h"
#include "cgroup/delegation.h"

namespace infervisor {
namespace {

class RealCgroup : public ::testing::Test {
  protected:
    void SetUp() override {
        auto own = discover_own_cgroup("/proc");
        if (!own) GTEST_SKIP() << "no cgroup2 here: " << own.error().message();
        dir_ = CgroupDir(*own / ("infervisor-test-" + std::to_string(getpid())));
        if (auto r = dir_->create(); !r)
            GTEST_SKIP() << "cannot create a cgroup (not root?): " << r.error().message();
    }
    void TearDown() override {
        if (dir_ && dir_->exists()) (void)dir_->remove();
    }
    std::optional<CgroupDir> dir_;
};

// Forks a child that moves itself into `dir` and then forks a grandchild
// that double-forks away: both must die by cgroup kill alone.
pid_t spawn_family(const CgroupDir& dir) {
    pid_t pid = fork();
    if (pid == 0) {
        (void)dir.move_process(getpid());
        if (fork() == 0) {
            setsid();
            if (fork() == 0) {
                signal(SIGTERM, SIG_IGN);
                for (;;) pause();
            }
            _exit(0);
        }
        for (;;) pause();
    }
    return pid;
}

TEST_F(RealCgroup, KillEmptiesTheCgroupIncludingDoubleForkedOrphans) {
    pid_t child = spawn_family(*dir_);
    ASSERT_GT(child, 0);
    // Wait (bounded by count, not time) until both processes are inside.
    for (int i = 0; i < 10000 && dir_->procs().value_or({}).size() < 2; ++i) usleep(1000);
    ASSERT_EQ(dir_->procs()->size(), 2u);
    EXPECT_TRUE(*dir_->populated());

    ASSERT_TRUE(dir_->kill().ok());
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFSIGNALED(status));
    EXPECT_EQ(WTERMSIG(status), SIGKILL);
    for (int i = 0; i < 10000 && *dir_->populated(); ++i) usleep(1000);
    EXPECT_FALSE(*dir_->populated());
    EXPECT_TRUE(dir_->procs()->empty());
    EXPECT_TRUE(dir_->remove().ok());
}

TEST_F(RealCgroup, RemoveFailsWhilePopulated) {
    pid_t child = spawn_family(*dir_);
    for (int i = 0; i < 10000 && dir_->procs().value_or({}).size() < 2; ++i) usleep(1000);
    auto r = dir_->remove();
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, EBUSY);
    (void)dir_->kill();
    waitpid(child, nullptr, 0);
    for (int i = 0; i < 10000 && *dir_->populated(); ++i) usleep(1000);
}

// systemd >= 251 marks a Delegate=yes cgroup with trusted.delegate=1; the
// kernel's cgroupfs keeps trusted.* attributes, so set them as systemd would.
TEST_F(RealCgroup, DelegationMarkIsSystemdsTrustedDelegateAttribute) {
    EXPECT_EQ(delegation_mark(dir_->path()), DelegationMark::absent);
    ASSERT_EQ(::setxattr(dir_->path().c_str(), "trusted.delegate", "0", 1, 0), 0)
        << strerror(errno);
    EXPECT_EQ(delegation_mark(dir_->path()), DelegationMark::absent);
    ASSERT_EQ(::setxattr(dir_->path().c_str(), "trusted.delegate", "1", 1, 0), 0)
        << strerror(errno);
    EXPECT_EQ(delegation_mark(dir_->path()), DelegationMark::present);
    EXPECT_EQ(delegation_mark(dir_->path() / "no-such-cgroup"), DelegationMark::unknown);
}

}  // namespace
}  // namespace infervisor
