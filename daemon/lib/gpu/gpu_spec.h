// GpuSpec: a worker's `gpu:` key — which GPUs it is given and how much of
// their memory it may hold. Plain data.
//
//   gpu:
//     devices: [0, 1]      # NVML index, UUID (GPU-...) or PCI address
//     memory_max: 40G      # summed over its devices
//
// `devices` become CUDA_VISIBLE_DEVICES (as UUIDs, with
// CUDA_DEVICE_ORDER=PCI_BUS_ID: CUDA's default order is not NVML's) at each
// start (gpu/gpu_assignment.h). They only tell CUDA what to use: a worker can
// still open another GPU's device file. `memory_max` is what the gpu.memory
// metric is a percentage of (policy/metrics.h): the shipped rules act on it;
// where the kernel's dmem controller has regions for the cards (AMD, Intel
// xe; never NVIDIA) it is also each card's dmem.max (cgroup/dmem.h). An AMD
// or Intel card's render node group is added to the worker's groups
// (gpu/gpu_device_groups.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/units.h"

namespace infervisor {

struct GpuSpec {
    // As written: "0", "GPU-8f6c...", "0000:03:00.0" (a MIG instance is not
    // one yet: the devices read are whole GPUs); each syntax
    // checked by the parser, existence at config check (a warning: it may run
    // on a build host) and at each start (an error naming it).
    std::vector<std::string> devices;
    ByteLimit memory_max;  // nullopt: no cap to measure against

    bool operator==(const GpuSpec&) const = default;
};

// What kind of selector `text` is; nullopt when it is none of them.
enum class GpuSelectorKind { index, uuid, pci_bus_id };
std::optional<GpuSelectorKind> gpu_selector_kind(std::string_view text);

}  // namespace infervisor
