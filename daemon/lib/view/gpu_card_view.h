// GpuCardView: one of the host's GPUs as `infervisorctl status` shows it and
// the Varlink List reply carries it (type GpuStatus): its identity, its
// memory used of total and its compute use at the last reading, and why it
// cannot be used when it is in error. Plain data; services/ fills it from
// the GPU reading (services/gpu_watch.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace infervisor {

struct GpuCardView {
    unsigned index = 0;                    // NVML's index; for DRM the card number
    std::string device;                    // PCI address, "0000:03:00.0"
    std::string vendor;                    // "nvidia", "amd", "intel"
    std::string name;                      // "NVIDIA H100 80GB HBM3"; "" when unknown
    std::optional<uint64_t> memory_total;  // bytes
    std::optional<uint64_t> memory_used;   // bytes, every process on it
    std::optional<double> utilization;     // %
    std::string fault;                     // "" when it answers

    bool operator==(const GpuCardView&) const = default;
};

// What one worker's processes hold on one card.
struct GpuCardUse {
    std::string device;   // PCI address
    uint64_t memory = 0;  // bytes

    bool operator==(const GpuCardUse&) const = default;
};

}  // namespace infervisor
