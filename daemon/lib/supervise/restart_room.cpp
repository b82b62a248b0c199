#include "supervise/restart_room.h"

#include <algorithm>

namespace infervisor {

std::optional<uint64_t> room_needed(std::optional<uint64_t> memory_max,
                                    std::optional<uint64_t> last_peak) {
    if (memory_max && last_peak) return std::min(*memory_max, *last_peak);
    return memory_max ? memory_max : last_peak;
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
