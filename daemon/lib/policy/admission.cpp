#include "policy/admission.h"

#include "base/units.h"

namespace infervisor {

AdmissionVerdict check_admission(uint64_t needs, std::optional<uint64_t> mem_available,
                                 const std::vector<ReservedWorker>& running) {
    AdmissionVerdict v;
    v.needs = needs;
    v.mem_available = mem_available;
    for (const auto& w : running) {
        uint64_t used = w.memory_current.value_or(0);
        if (w.reserve > used) v.reserved_unused += w.reserve - used;
    }
    v.measurements = {{"NEEDS_BYTES", std::to_string(needs)},
                      {"RESERVED_UNUSED_BYTES", std::to_string(v.reserved_unused)},
                      {"RUNNING_RESERVED_WORKERS", std::to_string(running.size())}};
    if (!mem_available) {
        v.reason = "needs " + human_size(needs) + "; MemAvailable is unknown, so it starts";
        return v;
    }
    v.can_give = *mem_available > v.reserved_unused ? *mem_available - v.reserved_unused : 0;
    v.fits = needs <= *v.can_give;
    v.measurements.emplace_back("HOST_MEM_AVAILABLE_BYTES", std::to_string(*mem_available));
    v.measurements.emplace_back("CAN_GIVE_BYTES", std::to_string(*v.can_give));
    // One short line: the parenthesis only when running workers' reserves
    // take some of MemAvailable.
    v.reason = "needs " + human_size(needs) + "; the host can give " + human_size(*v.can_give);
    if (v.reserved_unused > 0)
        v.reason += " (MemAvailable " + human_size(*mem_available) + " less " +
                    human_size(v.reserved_unused) + " reserved by running workers)";
    return v;
}

}  // namespace infervisor
