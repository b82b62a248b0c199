#include "supervise/restart_room.h"

#include <algorithm>

namespace infervisor {

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

}  // namespace infervisor
