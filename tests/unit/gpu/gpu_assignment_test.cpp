// gpu.devices resolved at a start: which device each selector names, the
// variables CUDA is given, and what a missing or broken card does.
#include "gpu/gpu_assignment.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cerrno>

namespace infervisor {
namespace {

using ::testing::HasSubstr;

GpuDevice nvidia(unsigned index, std::string uuid, std::string pci) {
    GpuDevice d;
    d.index = index;
    d.vendor = "nvidia";
    d.name = "NVIDIA H100";
    d.uuid = std::move(uuid);
    d.pci_bus_id = std::move(pci);
    return d;
}

std::vector<GpuDevice> host() {
    GpuDevice amd;
    amd.index = 0;  // card0: a DRM card number, not an NVML index
    amd.vendor = "amd";
    amd.pci_bus_id = "0000:c1:00.0";
    return {nvidia(0, "GPU-aaaa", "0000:03:00.0"), nvidia(1, "GPU-bbbb", "0000:04:00.0"), amd};
}

TEST(GpuAssignment, NvidiaDevicesBecomeCudaUuidsInPciOrder) {
    auto assigned = assign_gpus(GpuSpec{{"1", "0000:03:00.0"}, std::nullopt}, host());
    ASSERT_TRUE(assigned) << assigned.error().message();
    EXPECT_EQ(assigned->environment.at("CUDA_VISIBLE_DEVICES"), "GPU-bbbb,GPU-aaaa");
    EXPECT_EQ(assigned->environment.at("CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
    ASSERT_EQ(assigned->devices.size(), 2u);
    EXPECT_EQ(assigned->devices[0].uuid, "GPU-bbbb");
}

TEST(GpuAssignment, AnIndexIsNvmlsAndAPciAddressAnyVendorsInAnyCase) {
    EXPECT_EQ(find_gpu(host(), "0")->vendor, "nvidia");
    EXPECT_EQ(find_gpu(host(), "0000:C1:00.0")->vendor, "amd");
    EXPECT_EQ(find_gpu(host(), "GPU-bbbb")->index, 1u);
    EXPECT_EQ(find_gpu(host(), "2"), nullptr);
    // An AMD device is watched, not assigned: no variable names it.
    auto amd = assign_gpus(GpuSpec{{"0000:c1:00.0"}, std::nullopt}, host());
    ASSERT_TRUE(amd);
    EXPECT_TRUE(amd->environment.empty());
    EXPECT_EQ(amd->devices.size(), 1u);
}

TEST(GpuAssignment, AMissingDeviceIsAnErrorThatListsTheHostsGpus) {
    auto assigned = assign_gpus(GpuSpec{{"0", "3"}, std::nullopt}, host());
    ASSERT_FALSE(assigned);
    EXPECT_EQ(assigned.error().code, 0);
    EXPECT_THAT(assigned.error().what,
                HasSubstr("gpu device '3' does not exist on this host (its GPUs: 0 NVIDIA H100 "
                          "(GPU-aaaa, 0000:03:00.0); 1 NVIDIA H100 (GPU-bbbb, 0000:04:00.0); 0 "
                          "amd (0000:c1:00.0))"));
    auto none = assign_gpus(GpuSpec{{"0"}, std::nullopt}, {});
    ASSERT_FALSE(none);
    EXPECT_THAT(none.error().what, HasSubstr("(its GPUs: none)"));
}

TEST(GpuAssignment, ABrokenCardIsAWaitNotAFailedStart) {
    auto devices = host();
    devices[1].fault = "GPU is lost (fallen off the bus)";
    auto assigned = assign_gpus(GpuSpec{{"1"}, std::nullopt}, devices);
    ASSERT_FALSE(assigned);
    EXPECT_EQ(assigned.error().code, EWOULDBLOCK);
    EXPECT_THAT(assigned.error().what, HasSubstr("is in error: GPU is lost"));
    EXPECT_TRUE(assign_gpus(GpuSpec{{"0"}, std::nullopt}, devices));
}

TEST(GpuAssignment, NoDevicesNoVariables) {
    auto assigned = assign_gpus(GpuSpec{{}, 1ull << 30}, host());
    ASSERT_TRUE(assigned);
    EXPECT_TRUE(assigned->environment.empty());
}

}  // namespace
}  // namespace infervisor
