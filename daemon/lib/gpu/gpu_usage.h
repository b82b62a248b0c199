// GpuUsage: the host's GPU snapshot (gpu/gpu_snapshot.h) turned into what
// the policy reads: each worker's use, summed over the processes of its
// cgroup, and the device with the least memory left.
//
// Contract: a GpuReading pairs each process of the snapshot with its cgroup
// as /proc/PID/cgroup names it (read right after the snapshot, in the same
// background job: procfs reads may block on a thrashing host). A pid that
// exited in between has no cgroup and counts for nobody; one recycled in
// that instant may count for another cgroup for one reading — the window is
// a few milliseconds and the next reading corrects it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "gpu/gpu_snapshot.h"

namespace infervisor {

struct GpuReading {
    TimePoint time{};
    GpuSnapshot snapshot;
    // Parallel to snapshot.processes: "/system.slice/.../workers/llama", or
    // empty when the process was gone.
    std::vector<std::string> process_cgroups;
    // Why NVML was closed after this reading (NvmlLibrary::stale(): the
    // driver was unloaded or upgraded); empty when it was not.
    std::string nvml_stale;
};

// The cgroup v2 path of `pid` ("0::/a/b" in {procfs}/PID/cgroup); empty when
// it cannot be read.
std::string cgroup_of(const std::filesystem::path& procfs, pid_t pid);

// Fills reading.process_cgroups for reading.snapshot.
void tag_cgroups(const std::filesystem::path& procfs, GpuReading& reading);

struct WorkerGpuUse {
    struct Device {
        std::string pci_bus_id;
        uint64_t memory = 0;                   // bytes its processes hold there
        std::optional<double> utilization;     // % summed over its processes
        std::optional<uint64_t> memory_total;  // the device's
    };
    std::vector<Device> devices;           // the devices it holds memory on, snapshot order
    uint64_t memory = 0;                   // summed over devices
    std::optional<double> utilization;     // summed over devices (200% = two busy GPUs)
    std::optional<uint64_t> memory_total;  // of the devices it holds memory on
};

// The use of the processes in `cgroup` (relative to the cgroup2 mount, with
// a leading '/') or below it.
WorkerGpuUse use_of(const GpuReading& reading, std::string_view cgroup);

// The device with the least memory available (total - used) that answers
// (no fault); null when no device gives both figures.
const GpuDevice* tightest_gpu(const GpuSnapshot& snapshot);

}  // namespace infervisor
