// gpu.devices resolved at a start: which device each selector names, the
// variables CUDA is given, and what a missing or broken card does.
#include "gpu/gpu_assignment.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <map>
#include <string>
#include <vector>

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
    amd.uuid = "GPU-00000000000000c1";  // amdgpu's unique_id, as ROCm spells it
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
    // An AMD card answers to its UUID too (amdgpu's unique_id).
    EXPECT_EQ(find_gpu(host(), "GPU-00000000000000c1")->vendor, "amd");
}

GpuDevice drm(unsigned card, std::string vendor, std::string pci, std::string uuid = "") {
    GpuDevice d;
    d.index = card;
    d.vendor = std::move(vendor);
    d.pci_bus_id = std::move(pci);
    d.uuid = std::move(uuid);
    return d;
}

TEST(GpuAssignment, AmdDevicesBecomeRocrUuids) {
    auto devices = host();
    devices.push_back(drm(1, "amd", "0000:c2:00.0", "GPU-00000000000000c2"));
    auto assigned =
        assign_gpus(GpuSpec{{"0000:c2:00.0", "GPU-00000000000000c1"}, std::nullopt}, devices);
    ASSERT_TRUE(assigned) << assigned.error().message();
    EXPECT_EQ(assigned->environment,
              (std::map<std::string, std::string>{
                  {"ROCR_VISIBLE_DEVICES", "GPU-00000000000000c2,GPU-00000000000000c1"}}));
}

// Indices in Level Zero's PCI order among Intel cards only: not the card
// numbers, and not counting other vendors' cards; domain 10000 (a VMD
// domain) sorts after 2000, as numbers do and text does not.
TEST(GpuAssignment, IntelDevicesBecomeLevelZeroIndicesInPciOrder) {
    std::vector<GpuDevice> devices = {
        drm(0, "intel", "10000:01:00.0"), drm(1, "amd", "0000:05:00.0", "GPU-00000000000000aa"),
        drm(2, "intel", "2000:01:00.0"), drm(3, "intel", "0000:00:02.0")};
    auto assigned = assign_gpus(GpuSpec{{"2000:01:00.0", "0000:00:02.0"}, std::nullopt}, devices);
    ASSERT_TRUE(assigned) << assigned.error().message();
    EXPECT_EQ(assigned->environment,
              (std::map<std::string, std::string>{{"ZE_AFFINITY_MASK", "1,0"},
                                                  {"ZE_ENABLE_PCI_ID_DEVICE_ORDER", "1"}}));
}

TEST(GpuAssignment, MixedVendorsEachVariableGetsItsOwnDevices) {
    auto devices = host();
    devices.push_back(drm(1, "intel", "0000:d1:00.0"));
    auto assigned =
        assign_gpus(GpuSpec{{"0000:d1:00.0", "1", "0000:c1:00.0"}, std::nullopt}, devices);
    ASSERT_TRUE(assigned) << assigned.error().message();
    EXPECT_EQ(assigned->environment,
              (std::map<std::string, std::string>{{"CUDA_VISIBLE_DEVICES", "GPU-bbbb"},
                                                  {"CUDA_DEVICE_ORDER", "PCI_BUS_ID"},
                                                  {"ROCR_VISIBLE_DEVICES", "GPU-00000000000000c1"},
                                                  {"ZE_AFFINITY_MASK", "0"},
                                                  {"ZE_ENABLE_PCI_ID_DEVICE_ORDER", "1"}}));
    ASSERT_EQ(assigned->devices.size(), 3u);
    EXPECT_EQ(assigned->devices[0].vendor, "intel");
}

// Without its identifier a card could not be named, and without the variable
// the worker would see every card. An NVIDIA UUID or an AMD unique_id that
// could not be read now may be read later: the start waits. An AMD card that
// has no unique_id never will: a plain error.
TEST(GpuAssignment, ADeviceWithoutItsIdentifierWaitsOrFailsNamingIt) {
    auto devices = host();
    devices[1].uuid.clear();
    auto nvidia_missing = assign_gpus(GpuSpec{{"1"}, std::nullopt}, devices);
    ASSERT_FALSE(nvidia_missing);
    EXPECT_EQ(nvidia_missing.error().code, EWOULDBLOCK);
    EXPECT_THAT(nvidia_missing.error().what,
                HasSubstr("gpu device '1' (1 NVIDIA H100 (0000:04:00.0)): its UUID could not be "
                          "read"));

    devices[2].uuid.clear();
    devices[2].uuid_unreadable = true;
    auto amd_unreadable = assign_gpus(GpuSpec{{"0000:c1:00.0"}, std::nullopt}, devices);
    ASSERT_FALSE(amd_unreadable);
    EXPECT_EQ(amd_unreadable.error().code, EWOULDBLOCK);
    EXPECT_THAT(amd_unreadable.error().what,
                HasSubstr("gpu device '0000:c1:00.0' (0 amd (0000:c1:00.0)): its unique_id could "
                          "not be read"));

    devices[2].uuid_unreadable = false;
    auto amd_none = assign_gpus(GpuSpec{{"0000:c1:00.0"}, std::nullopt}, devices);
    ASSERT_FALSE(amd_none);
    EXPECT_EQ(amd_none.error().code, 0);
    EXPECT_THAT(amd_none.error().what,
                HasSubstr("gpu device '0000:c1:00.0' (0 amd (0000:c1:00.0)): amdgpu gives no "
                          "unique_id for it"));
    EXPECT_THAT(amd_none.error().what, HasSubstr("ROCR_VISIBLE_DEVICES cannot name it"));
}

TEST(GpuAssignment, AMissingDeviceIsAnErrorThatListsTheHostsGpus) {
    auto assigned = assign_gpus(GpuSpec{{"0", "3"}, std::nullopt}, host());
    ASSERT_FALSE(assigned);
    EXPECT_EQ(assigned.error().code, 0);
    EXPECT_THAT(assigned.error().what,
                HasSubstr("gpu device '3' does not exist on this host (its GPUs: 0 NVIDIA H100 "
                          "(GPU-aaaa, 0000:03:00.0); 1 NVIDIA H100 (GPU-bbbb, 0000:04:00.0); 0 "
                          "amd (GPU-00000000000000c1, 0000:c1:00.0))"));
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
