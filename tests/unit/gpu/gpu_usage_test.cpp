// A GPU snapshot turned into each worker's figures: its processes found by
// cgroup (its own and the ones below it, never a sibling whose name it
// prefixes), summed per device and over devices, and the host's tightest card.
#include "gpu/gpu_usage.h"

#include <gtest/gtest.h>

#include "support/temp_dir.h"

namespace infervisor {
namespace {

GpuDevice device(std::string pci, uint64_t total, uint64_t used) {
    GpuDevice d;
    d.vendor = "nvidia";
    d.pci_bus_id = std::move(pci);
    d.memory_total = total;
    d.memory_used = used;
    return d;
}

GpuReading reading() {
    GpuReading r;
    r.snapshot.devices = {device("0000:03:00.0", 80 << 20, 30 << 20),
                          device("0000:04:00.0", 80 << 20, 70 << 20)};
    r.snapshot.processes = {{100, "0000:03:00.0", 10 << 20, 40.0},
                            {101, "0000:04:00.0", 20 << 20, 30.0},
                            {102, "0000:03:00.0", 5 << 20, 10.0},
                            {200, "0000:04:00.0", 50 << 20, std::nullopt},
                            {300, "0000:03:00.0", 15 << 20, 5.0}};
    r.process_cgroups = {"/w/llama", "/w/llama", "/w/llama/sub", "/w/llama2", ""};
    return r;
}

TEST(GpuUsage, AWorkersProcessesAreSummedPerDeviceAndOverDevices) {
    WorkerGpuUse use = use_of(reading(), "/w/llama");
    ASSERT_EQ(use.devices.size(), 2u);
    EXPECT_EQ(use.devices[0].pci_bus_id, "0000:03:00.0");
    EXPECT_EQ(use.devices[0].memory, 15u << 20);  // its own and its sub-cgroup's
    EXPECT_DOUBLE_EQ(*use.devices[0].utilization, 50.0);
    EXPECT_EQ(use.devices[1].memory, 20u << 20);
    EXPECT_EQ(use.memory, 35u << 20);
    EXPECT_DOUBLE_EQ(*use.utilization, 80.0);
    EXPECT_EQ(*use.memory_total, 160u << 20);
}

TEST(GpuUsage, ASiblingWhoseNamePrefixesIsNotIncludedNorAGoneProcess) {
    WorkerGpuUse sibling = use_of(reading(), "/w/llama2");
    EXPECT_EQ(sibling.memory, 50u << 20);
    EXPECT_FALSE(sibling.utilization);  // its process has no figure
    WorkerGpuUse nobody = use_of(reading(), "/w/whisper");
    EXPECT_EQ(nobody.memory, 0u);
    EXPECT_TRUE(nobody.devices.empty());
    EXPECT_EQ(use_of(reading(), "").memory, 0u);  // the untagged (gone) process
}

TEST(GpuUsage, TheTightestCardIsTheOneWithLeastAvailableThatAnswers) {
    GpuReading r = reading();
    EXPECT_EQ(tightest_gpu(r.snapshot)->pci_bus_id, "0000:04:00.0");
    r.snapshot.devices[1].fault = "GPU is lost";
    EXPECT_EQ(tightest_gpu(r.snapshot)->pci_bus_id, "0000:03:00.0");
    r.snapshot.devices[0].memory_used.reset();
    EXPECT_EQ(tightest_gpu(r.snapshot), nullptr);
}

TEST(GpuUsage, ACgroupIsReadFromTheV2Line) {
    testing::TempDir proc;
    proc.write("42/cgroup", "12:memory:/legacy\n0::/system.slice/w/llama\n");
    proc.write("43/cgroup", "garbage");
    EXPECT_EQ(cgroup_of(proc.path(), 42), "/system.slice/w/llama");
    EXPECT_EQ(cgroup_of(proc.path(), 43), "");
    EXPECT_EQ(cgroup_of(proc.path(), 44), "");
    GpuReading r;
    r.snapshot.processes = {{42, "0000:03:00.0", 1, std::nullopt},
                            {44, "0000:03:00.0", 1, std::nullopt}};
    tag_cgroups(proc.path(), r);
    EXPECT_EQ(r.process_cgroups, (std::vector<std::string>{"/system.slice/w/llama", ""}));
}

}  // namespace
}  // namespace infervisor
