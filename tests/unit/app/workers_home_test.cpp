#include "app/workers_home.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "support/temp_dir.h"

namespace infervisor {
namespace {

// A /proc stand-in for "self": a cgroup2 mount and this process's cgroup.
void fake_procfs(const testing::TempDir& procfs, const std::string& own_cgroup) {
    procfs.write("self/mountinfo",
                 "35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 "
                 "cgroup2 rw,nsdelegate,memory_recursiveprot\n");
    procfs.write("self/cgroup", "0::" + own_cgroup + "\n");
}

struct EnvGuard {
    explicit EnvGuard(const char* value) {
        if (value)
            ::setenv(kWorkersUnitEnv, value, 1);
        else
            ::unsetenv(kWorkersUnitEnv);
    }
    ~EnvGuard() { ::unsetenv(kWorkersUnitEnv); }
};

TEST(WorkersHome, AConfiguredRootIsUsedAsGivenWithTheDaemonInIt) {
    EnvGuard env("infervisor-workers.service");
    testing::TempDir procfs;
    fake_procfs(procfs, "/system.slice/infervisord.service");
    auto home =
        find_workers_home("/sys/fs/cgroup/mine", "/sys/fs/cgroup", Paths{.procfs = procfs.path()});
    ASSERT_TRUE(home.ok()) << home.error().message();
    EXPECT_EQ(home->root, "/sys/fs/cgroup/mine");
    EXPECT_EQ(home->home, CgroupTree::Home::own);
}

TEST(WorkersHome, WithoutAWorkersUnitTheDaemonsOwnCgroupOrItsSupervisorLeafsParent) {
    EnvGuard env(nullptr);
    testing::TempDir procfs;
    fake_procfs(procfs, "/system.slice/infervisord.service/supervisor");
    auto home = find_workers_home("", "/sys/fs/cgroup", Paths{.procfs = procfs.path()});
    ASSERT_TRUE(home.ok()) << home.error().message();
    EXPECT_EQ(home->root, "/sys/fs/cgroup/system.slice/infervisord.service");
    EXPECT_EQ(home->home, CgroupTree::Home::own);
}

// Named but not active (here: a unit no systemd has; or no systemd to ask):
// the daemon's own cgroup, with a warning, rather than no daemon at all.
TEST(WorkersHome, AWorkersUnitThatIsNotActiveFallsBackToTheDaemonsOwnCgroup) {
    EnvGuard env("infervisor-test-no-such-unit-4711.service");
    testing::TempDir procfs;
    fake_procfs(procfs, "/system.slice/infervisord.service");
    auto home = find_workers_home("", "/sys/fs/cgroup", Paths{.procfs = procfs.path()});
    ASSERT_TRUE(home.ok()) << home.error().message();
    EXPECT_EQ(home->root, "/sys/fs/cgroup/system.slice/infervisord.service");
    EXPECT_EQ(home->home, CgroupTree::Home::own);
}

}  // namespace
}  // namespace infervisor
