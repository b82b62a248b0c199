// A worker's `gpu: {devices, memory_max}` as the configuration reads and
// --check-config judges it: each selector's syntax at its line, the
// variables gpu.devices sets kept out of `environment:`, and a device the
// host lacks a warning (the file may be checked on a build host).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/config_loader.h"

namespace infervisor {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string gpu_worker(const std::string& gpu, const std::string& extra = "") {
    return "workers:\n  - name: vllm\n    command: [/usr/bin/true]\n    memory: {max: 8G}\n" + gpu +
           extra;
}

TEST(GpuConfig, DevicesAndTheCapAreRead) {
    auto loaded = load_config_text(
        gpu_worker("    gpu: {devices: [0, GPU-8f6c1a2b-0000-1111-2222-333344445555, "
                   "0000:3B:00.0], memory_max: 40G}\n"),
        "g.yaml");
    ASSERT_TRUE(loaded.ok()) << loaded.errors.format();
    const auto& gpu = loaded.config.workers[0].gpu;
    ASSERT_TRUE(gpu);
    EXPECT_THAT(gpu->devices,
                ElementsAre("0", "GPU-8f6c1a2b-0000-1111-2222-333344445555", "0000:3B:00.0"));
    EXPECT_EQ(*gpu->memory_max, 40ull << 30);

    auto none = load_config_text(gpu_worker(""), "g.yaml");
    ASSERT_TRUE(none.ok()) << none.errors.format();
    EXPECT_FALSE(none.config.workers[0].gpu);
}

TEST(GpuConfig, DefaultsGiveTheCapAndNoneDropsIt) {
    auto loaded = load_config_text("defaults:\n  gpu: {memory_max: 20G}\n" +
                                       gpu_worker("    gpu: {devices: [1]}\n") +
                                       "  - name: cpu-only\n    command: [/usr/bin/true]\n"
                                       "    memory: {max: 1G}\n    gpu: none\n",
                                   "g.yaml");
    ASSERT_TRUE(loaded.ok()) << loaded.errors.format();
    const auto& gpu = loaded.config.workers[0].gpu;
    ASSERT_TRUE(gpu);
    EXPECT_THAT(gpu->devices, ElementsAre("1"));
    EXPECT_EQ(*gpu->memory_max, 20ull << 30);
    EXPECT_FALSE(loaded.config.workers[1].gpu);
}

TEST(GpuConfig, ASelectorThatNamesNoGpuIsAnErrorAtItsLine) {
    for (const char* bad : {"cuda:0", "-1", "0000:03:00", "GPU-not/hex!", "1234", "03:00.0", "01",
                            "MIG-4b0e5c3a-0000-1111-2222-333344445555"}) {
        auto loaded = load_config_text(
            gpu_worker(std::string("    gpu:\n      devices: ['") + bad + "']\n"), "g.yaml");
        std::string errors = loaded.errors.format();
        EXPECT_FALSE(loaded.ok()) << bad;
        EXPECT_THAT(errors, HasSubstr("g.yaml:6:")) << bad;
        EXPECT_THAT(errors, HasSubstr("'" + std::string(bad) + "' is no GPU")) << bad;
    }
    auto twice = load_config_text(gpu_worker("    gpu: {devices: [0, 0]}\n"), "g.yaml");
    EXPECT_THAT(twice.errors.format(), HasSubstr("'gpu.devices' names '0' twice"));
    auto unknown = load_config_text(gpu_worker("    gpu: {device: [0]}\n"), "g.yaml");
    EXPECT_THAT(unknown.errors.format(), HasSubstr("device"));
    EXPECT_FALSE(unknown.ok());
    auto size = load_config_text(gpu_worker("    gpu: {memory_max: lots}\n"), "g.yaml");
    EXPECT_FALSE(size.ok());
}

TEST(GpuConfig, TheVariablesGpuDevicesSetsAreNotTheEnvironmentsToSet) {
    auto loaded = load_config_text(
        gpu_worker("    gpu: {devices: [0]}\n", "    environment: {CUDA_VISIBLE_DEVICES: '1'}\n"),
        "g.yaml");
    EXPECT_FALSE(loaded.ok());
    EXPECT_THAT(loaded.errors.format(),
                HasSubstr("'CUDA_VISIBLE_DEVICES' is set by gpu.devices: give the devices there"));
    // AMD's and Intel's too, whichever vendor the devices are.
    for (const char* name : {"ROCR_VISIBLE_DEVICES", "ZE_AFFINITY_MASK"}) {
        auto other =
            load_config_text(gpu_worker("    gpu: {devices: [0]}\n",
                                        std::string("    environment: {") + name + ": '1'}\n"),
                             "g.yaml");
        EXPECT_THAT(other.errors.format(), HasSubstr(std::string("'") + name + "' is set by"));
    }
    // Without gpu.devices the worker may set it itself.
    auto own = load_config_text(
        gpu_worker("    gpu: {memory_max: 1G}\n", "    environment: {CUDA_VISIBLE_DEVICES: '1'}\n"),
        "g.yaml");
    EXPECT_TRUE(own.ok()) << own.errors.format();
}

TEST(GpuConfig, ADeviceTheHostLacksIsAWarningThatListsItsGpus) {
    std::vector<GpuDevice> host(1);
    host[0].index = 0;
    host[0].vendor = "nvidia";
    host[0].name = "NVIDIA H100";
    host[0].uuid = "GPU-1111";
    host[0].pci_bus_id = "0000:03:00.0";
    ValidationOptions options;
    options.host_gpus = &host;
    auto loaded = load_config_text(
        gpu_worker("    gpu: {devices: [0, 1, GPU-1111, 0000:03:00.0, 0000:04:00.0]}\n"), "g.yaml",
        options);
    ASSERT_TRUE(loaded.ok()) << loaded.errors.format();
    auto warnings = loaded.errors.warning_lines();
    ASSERT_EQ(warnings.size(), 2u);
    EXPECT_THAT(warnings[0], HasSubstr("g.yaml:5:"));
    EXPECT_THAT(warnings[0], HasSubstr("gpu device '1' does not exist on this host (its GPUs: 0 "
                                       "NVIDIA H100 (GPU-1111, 0000:03:00.0))"));
    EXPECT_THAT(warnings[1], HasSubstr("'0000:04:00.0'"));

    auto unknown_host = load_config_text(gpu_worker("    gpu: {devices: [7]}\n"), "g.yaml");
    EXPECT_THAT(unknown_host.errors.warning_lines(), IsEmpty());
}

}  // namespace
}  // namespace infervisor
