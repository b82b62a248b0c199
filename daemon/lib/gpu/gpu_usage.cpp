#include "gpu/gpu_usage.h"

#include <algorithm>

#include "base/file_io.h"
#include "cgroup/cgroup_discovery.h"

namespace infervisor {

std::string cgroup_of(const std::filesystem::path& procfs, pid_t pid) {
    auto text = read_file(procfs / std::to_string(pid) / "cgroup");
    if (!text) return {};
    return find_cgroup2_path(*text).value_or(std::string());
}

void tag_cgroups(const std::filesystem::path& procfs, GpuReading& reading) {
    reading.process_cgroups.clear();
    for (const auto& p : reading.snapshot.processes)
        reading.process_cgroups.push_back(cgroup_of(procfs, p.pid));
}

namespace {

bool within(std::string_view path, std::string_view cgroup) {
    if (cgroup.empty() || !path.starts_with(cgroup)) return false;
    return path.size() == cgroup.size() || path[cgroup.size()] == '/';
}

const GpuDevice* device_at(const GpuSnapshot& snapshot, const std::string& pci_bus_id) {
    auto it = std::find_if(snapshot.devices.begin(), snapshot.devices.end(),
                           [&](const GpuDevice& d) { return d.pci_bus_id == pci_bus_id; });
    return it == snapshot.devices.end() ? nullptr : &*it;
}

}  // namespace

WorkerGpuUse use_of(const GpuReading& reading, std::string_view cgroup) {
    WorkerGpuUse use;
    const auto& processes = reading.snapshot.processes;
    for (size_t i = 0; i < processes.size() && i < reading.process_cgroups.size(); ++i) {
        if (!within(reading.process_cgroups[i], cgroup)) continue;
        const GpuProcessUse& p = processes[i];
        auto it = std::find_if(use.devices.begin(), use.devices.end(),
                               [&](const auto& d) { return d.pci_bus_id == p.pci_bus_id; });
        if (it == use.devices.end()) {
            WorkerGpuUse::Device fresh{p.pci_bus_id, 0, std::nullopt, std::nullopt};
            if (const GpuDevice* d = device_at(reading.snapshot, p.pci_bus_id))
                fresh.memory_total = d->memory_total;
            it = use.devices.insert(use.devices.end(), fresh);
        }
        it->memory += p.memory;
        if (p.utilization) it->utilization = it->utilization.value_or(0) + *p.utilization;
    }
    for (const auto& d : use.devices) {
        use.memory += d.memory;
        if (d.utilization) use.utilization = use.utilization.value_or(0) + *d.utilization;
        if (d.memory_total) use.memory_total = use.memory_total.value_or(0) + *d.memory_total;
    }
    return use;
}

const GpuDevice* tightest_gpu(const GpuSnapshot& snapshot) {
    const GpuDevice* tightest = nullptr;
    uint64_t least = 0;
    for (const auto& d : snapshot.devices) {
        if (!d.fault.empty() || !d.memory_total || !d.memory_used) continue;
        uint64_t available =
            *d.memory_total > *d.memory_used ? *d.memory_total - *d.memory_used : 0;
        if (!tightest || available < least) {
            tightest = &d;
            least = available;
        }
    }
    return tightest;
}

}  // namespace infervisor
