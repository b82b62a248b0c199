// GpuSnapshot: one reading of the host's GPUs and of the processes that hold
// their memory, the input of per-worker GPU figures (gpu/gpu_usage.h).
// Plain data, filled by a source: NVML (gpu/nvml_library.h) for NVIDIA, DRM
// fdinfo (gpu/drm_fdinfo.h) for AMD and Intel. A figure the source does not
// give is left empty; a device or call that fails is listed in `errors` and
// never fails the whole snapshot.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace infervisor {

struct GpuDevice {
    // NVML's index for NVIDIA (nvmlDeviceGetHandleByIndex); for DRM the card
    // number of /sys/class/drm/cardN.
    unsigned index = 0;
    std::string vendor;  // "nvidia", "amd", "intel", or the DRM driver's name
    std::string name;    // "NVIDIA H100 80GB HBM3"; empty when unknown
    // "GPU-8f...": NVIDIA's (NVML); for AMD "GPU-" and amdgpu's sysfs
    // unique_id, as ROCm's runtime spells the card's UUID (gpu/drm_fdinfo.h);
    // empty for Intel and when unknown.
    std::string uuid;
    // The card has a UUID but it could not be read now (amdgpu refuses the
    // read while the card is in reset or suspended); false when read or when
    // the card has none.
    bool uuid_unreadable = false;
    // "0000:03:00.0": domain, bus, device, function, lower case; the key that
    // joins a process's use to its device (NVML gives it upper case with an
    // 8-digit domain: normalised by the source).
    std::string pci_bus_id;
    std::optional<uint64_t> memory_total;  // bytes
    std::optional<uint64_t> memory_used;   // bytes, by every process on the device
    std::optional<double> utilization;     // %, busy over the driver's last period
    // Why the device cannot be used (NVML_ERROR_GPU_IS_LOST, uncorrected ECC
    // errors, a row remap pending: gpu/nvml_library.h); empty when it
    // answers and is healthy.
    std::string fault;
};

// One process's use of one device. A process on two devices is two entries.
struct GpuProcessUse {
    pid_t pid = 0;           // in the daemon's (the host's) pid namespace
    std::string pci_bus_id;  // the device, as GpuDevice::pci_bus_id
    uint64_t memory = 0;     // bytes of device memory the process holds
    // % of the device's compute this process used in the last sample period
    // (NVML's per-process SM utilization); empty when the source has none.
    std::optional<double> utilization;
};

// One Xid event (NVIDIA's driver error report, as in the kernel log's
// "NVRM: Xid (PCI:0000:03:00): 79, ...") taken from the driver since the
// last reading.
struct GpuXid {
    std::string pci_bus_id;  // the device, as GpuDevice::pci_bus_id; empty when unknown
    uint64_t xid = 0;        // 999: the driver's "unknown Xid"
};

struct GpuSnapshot {
    std::vector<GpuDevice> devices;
    std::vector<GpuProcessUse> processes;
    std::vector<GpuXid> xids;         // NVML's; each reported by one snapshot only
    std::vector<std::string> errors;  // "what: why", one per failed call or device
};

}  // namespace infervisor
