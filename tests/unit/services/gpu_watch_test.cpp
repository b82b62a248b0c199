// GpuWatch's fallback to the dmem controller (services/gpu_watch.h
// add_dmem_use): a card the processes' fdinfo shows nothing on, where the
// kernel's dmem.current charges the worker, counts as the worker's; a card
// fdinfo does show keeps fdinfo's figure.
#include "services/gpu_watch.h"

#include <gtest/gtest.h>

#include "support/byte_units.h"

namespace infervisor {
namespace {

GpuSnapshot two_cards() {
    GpuSnapshot s;
    GpuDevice amd;
    amd.index = 1;
    amd.vendor = "amd";
    amd.pci_bus_id = "0000:03:00.0";
    amd.memory_total = 64 * GiB;
    GpuDevice intel = amd;
    intel.index = 2;
    intel.vendor = "intel";
    intel.pci_bus_id = "0000:04:00.0";
    intel.memory_total = 16 * GiB;
    s.devices = {amd, intel};
    return s;
}

TEST(DmemUse, ACardFdinfoDoesNotShowCountsFromDmemCurrent) {
    WorkerSample sample;
    sample.gpu_memory = 0;                // fdinfo: nothing
    sample.gpu_device_memory = 64 * GiB;  // the total of its gpu.devices
    add_dmem_use(sample, two_cards(),
                 {{"drm/0000:03:00.0/vram", 6 * GiB},
                  {"drm/0000:03:00.0/gtt", 1 * GiB},    // host memory: memory.max's
                  {"drm/0000:09:00.0/vram0", 2 * GiB},  // a card not read: left out
                  {"drm/0000:04:00.0/vram0", 0}});
    EXPECT_EQ(sample.gpu_memory, 6 * GiB);
    ASSERT_EQ(sample.gpu_devices.size(), 1u);
    EXPECT_EQ(sample.gpu_devices[0], (WorkerGpuDeviceUse{"0000:03:00.0", 6 * GiB}));
    EXPECT_EQ(sample.gpu_device_memory, 64 * GiB);
}

TEST(DmemUse, ACardFdinfoShowsKeepsFdinfosFigure) {
    WorkerSample sample;
    sample.gpu_memory = 3 * GiB;
    sample.gpu_device_memory = 64 * GiB;
    sample.gpu_devices = {{"0000:03:00.0", 3 * GiB}};
    add_dmem_use(sample, two_cards(),
                 {{"drm/0000:03:00.0/vram", 5 * GiB}, {"drm/0000:04:00.0/vram0", 1 * GiB}});
    EXPECT_EQ(sample.gpu_memory, 4 * GiB) << "fdinfo's 3G on the first, dmem's 1G on the second";
    ASSERT_EQ(sample.gpu_devices.size(), 2u);
    EXPECT_EQ(sample.gpu_devices[0].memory, 3 * GiB);
    EXPECT_EQ(sample.gpu_devices[1], (WorkerGpuDeviceUse{"0000:04:00.0", 1 * GiB}));
    EXPECT_EQ(sample.gpu_device_memory, 80 * GiB);
}

TEST(DmemUse, NoRegionsChangeNothing) {
    WorkerSample sample;
    sample.gpu_memory = 0;
    add_dmem_use(sample, two_cards(), {});
    add_dmem_use(sample, two_cards(), {{"not-drm", 5}, {"drm/noslash", 5}});
    EXPECT_EQ(sample.gpu_memory, 0u);
    EXPECT_TRUE(sample.gpu_devices.empty());
}

}  // namespace
}  // namespace infervisor
