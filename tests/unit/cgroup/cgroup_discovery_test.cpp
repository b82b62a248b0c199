#include "cgroup/cgroup_discovery.h"

#include <gtest/gtest.h>

#include "support/temp_dir.h"

namespace infervisor {
namespace {

constexpr const char* kHybridMountinfo =
    "25 30 0:23 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
    "30 25 0:26 / /sys/fs/cgroup ro,nosuid shared:9 - tmpfs tmpfs ro,mode=755\n"
    "31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw,nsdelegate\n"
    "32 30 0:28 / /sys/fs/cgroup/memory rw shared:11 - cgroup cgroup rw,memory\n";

TEST(CgroupDiscovery, FindsTheCgroup2MountOnHybridHosts) {
    EXPECT_EQ(*find_cgroup2_mount(kHybridMountinfo), "/sys/fs/cgroup/unified");
}

TEST(CgroupDiscovery, SkipsBindMountsOfSubtreesAndUnescapes) {
    const char* text =
        "40 1 0:30 /sub /mnt/x rw - cgroup2 cgroup2 rw\n"
        "41 1 0:30 / /mnt/with\\040space rw - cgroup2 cgroup2 rw\n";
    EXPECT_EQ(*find_cgroup2_mount(text), "/mnt/with space");
}

TEST(CgroupDiscovery, SaysSoWhenThereIsNoCgroup2) {
    auto r = find_cgroup2_mount("32 30 0:28 / /sys/fs/cgroup/memory rw - cgroup cgroup rw\n");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().what.find("no cgroup2"), std::string::npos);
}

TEST(CgroupDiscovery, ReadsTheV2LineOfProcCgroup) {
    EXPECT_EQ(*find_cgroup2_path("4:memory:/x\n0::/system.slice/infervisord.service\n"),
              "/system.slice/infervisord.service");
    EXPECT_FALSE(find_cgroup2_path("4:memory:/x\n").ok());
}

TEST(CgroupDiscovery, JoinsMountAndPathFromProcfs) {
    testing::TempDir proc;
    proc.write("self/mountinfo", kHybridMountinfo);
    proc.write("self/cgroup", "0::/system.slice/infervisord.service\n");
    EXPECT_EQ(*discover_own_cgroup(proc.path()),
              "/sys/fs/cgroup/unified/system.slice/infervisord.service");
}

}  // namespace
}  // namespace infervisor
