#include "supervise/restart_room.h"

#include <algorithm>

#include "base/units.h"

namespace infervisor {

namespace {

std::string join_devices(const std::vector<std::string>& devices) {
    std::string out;
    for (const auto& d : devices) out += (out.empty() ? "" : ", ") + d;
    return out;
}

}  // namespace

std::optional<uint64_t> room_needed(std::optional<uint64_t> memory_max,
                                    std::optional<uint64_t> last_peak) {
    if (memory_max && last_peak) return std::min(*memory_max, *last_peak);
    return memory_max ? memory_max : last_peak;
}

std::optional<uint64_t> room_needed_after(const EndedRun& run) {
    std::optional<uint64_t> at_peak = room_needed(run.memory_max, run.peak);
    // Ended for its own growth (or its size is unknown): what it took to
    // serve, not the leak's peak.
    if (!run.host_ran_out || !at_peak) return run.serving_baseline ? run.serving_baseline : at_peak;
    // The host ran out with it at its peak: back at that size it would run
    // out again, whatever it took when it began serving. One still loading
    // then had not reached its size: its peak is only how far the load got
    // (VM 132 saw a batch job killed at 346M of an 800M load restarted 2s
    // later into the same exhaustion), so it needs what it declared it may
    // take, its memory.max.
    if (run.serving_baseline) return std::max(*at_peak, *run.serving_baseline);
    return run.memory_max ? run.memory_max : at_peak;
}

RoomVerdict judge_room(uint64_t needed, const MemInfo& host) {
    RoomVerdict v;
    v.needed = needed;
    v.available = host.mem_available;
    if (!host.mem_total || !host.mem_available) return v;  // nothing to judge by
    const uint64_t total = *host.mem_total;
    v.needed = std::min(needed, total / 10 * 8);
    v.wanted_available = v.needed + total / 10;
    v.fits = *host.mem_available >= v.wanted_available;
    return v;
}

GpuRoomVerdict judge_gpu_room(const GpuRoomNeeded& needed, const std::vector<GpuDevice>& host) {
    GpuRoomVerdict v;
    v.needed = needed.bytes;
    uint64_t total = 0;
    for (const std::string& pci : needed.devices) {
        auto d = std::find_if(host.begin(), host.end(),
                              [&](const GpuDevice& g) { return g.pci_bus_id == pci; });
        if (d == host.end()) continue;
        if (!d->fault.empty()) {
            v.fits = false;
            v.why = pci + " is in error: " + d->fault;
            return v;
        }
        if (!d->memory_total || !d->memory_used) return v;  // nothing to judge by
        total += *d->memory_total;
        v.available += *d->memory_total > *d->memory_used ? *d->memory_total - *d->memory_used : 0;
    }
    if (total == 0) return v;
    v.needed = std::min(needed.bytes, total / 10 * 8);
    v.fits = v.available >= v.needed;
    if (!v.fits)
        v.why = human_size(v.available) + " of GPU memory free on " + join_devices(needed.devices) +
                ", less than the " + human_size(v.needed) + " it held";
    return v;
}

}  // namespace infervisor
