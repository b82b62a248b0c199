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
#include "cgroup/stat_file_set.h"

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
        if (!dir_ || !dir_->exists()) return;
        // Whatever a failed test left running would hold the test's stdout open.
        for (int i = 0; i < 100 && dir_->populated().value_or(false); ++i) {
            (void)dir_->kill();
            usleep(10000);
        }
        (void)dir_->remove();
    }
    std::optional<CgroupDir> dir_;
};

// Forks a child that moves itself into `dir` and then forks a grandchild
// that double-forks away: both must die by cgroup kill alone. Returns once
// the orphan runs (it says so on a pipe), so the whole family is inside.
pid_t spawn_family(const CgroupDir& dir) {
    int ready[2];
    if (::pipe(ready) < 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        ::close(ready[0]);
        (void)dir.move_process(getpid());
        if (fork() == 0) {
            setsid();
            if (fork() == 0) {
                signal(SIGTERM, SIG_IGN);
                (void)!::write(ready[1], "r", 1);
                ::close(ready[1]);
                for (;;) pause();
            }
            _exit(0);
        }
        ::close(ready[1]);
        for (;;) pause();
    }
    ::close(ready[1]);
    char byte;
    ssize_t n = ::read(ready[0], &byte, 1);  // EOF only if the family died
    ::close(ready[0]);
    return n == 1 ? pid : -1;
}

// Kills until empty: a process forked while cgroup.kill walks the cgroup
// can escape one kill (the daemon, too, repeats it; see Worker::after_empty).
bool kill_until_empty(const CgroupDir& dir) {
    for (int i = 0; i < 10000; ++i) {
        auto populated = dir.populated();
        if (!populated) return false;
        if (!*populated) return true;
        if (i % 100 == 0) (void)dir.kill();
        usleep(1000);
    }
    return false;
}

TEST_F(RealCgroup, KillEmptiesTheCgroupIncludingDoubleForkedOrphans) {
    pid_t child = spawn_family(*dir_);
    ASSERT_GT(child, 0);
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
    ASSERT_GT(child, 0);
    auto r = dir_->remove();
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, EBUSY);
    EXPECT_TRUE(kill_until_empty(*dir_));
    waitpid(child, nullptr, 0);
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

// The policy's held statistics files (cgroup/stat_file_set.h): a cgroup
// removed and made again under the same path (a worker's restart) is read
// afresh, never through the dead one's descriptor.
TEST_F(RealCgroup, HeldStatFilesFollowACgroupMadeAgainUnderItsPath) {
    StatFileSet files(dir_->path());
    auto first = files.read("cgroup.events");
    ASSERT_TRUE(first) << first.error().message();
    EXPECT_NE(first->find("populated 0"), std::string::npos) << *first;
    ASSERT_EQ(files.held(), 1u);
    ASSERT_TRUE(dir_->remove());
    ASSERT_TRUE(dir_->create());
    pid_t member = spawn_family(*dir_);
    ASSERT_GT(member, 0);
    auto again = files.read("cgroup.events");
    ASSERT_TRUE(again) << again.error().message();
    EXPECT_NE(again->find("populated 1"), std::string::npos)
        << "the new cgroup's file, not the removed one's: " << *again;
    ASSERT_TRUE(dir_->kill());
    ::waitpid(member, nullptr, 0);
}

}  // namespace
}  // namespace infervisor
