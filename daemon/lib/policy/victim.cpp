#include "policy/victim.h"

#include <limits>
#include <tuple>

namespace infervisor {

namespace {

// Larger key = better victim.
auto victim_key(const VictimView& v) {
    constexpr double kUnknownGrowth = -std::numeric_limits<double>::infinity();
    double runaway = v.growth_bytes_per_min.value_or(0.0);
    if (runaway < kRunawayGrowthBytesPerMin) runaway = 0.0;
    return std::make_tuple(-static_cast<long long>(v.priority), runaway,
                           v.memory_current ? static_cast<long double>(*v.memory_current) : -1.0L,
                           v.growth_percent_per_min.value_or(kUnknownGrowth));
}

}  // namespace

std::optional<size_t> pick_victim(const std::vector<VictimView>& workers) {
    std::optional<size_t> best;
    for (size_t i = 0; i < workers.size(); ++i) {
        const VictimView& w = workers[i];
        if (w.is_protected) continue;
        if (!best) {
            best = i;
            continue;
        }
        auto mine = victim_key(w), theirs = victim_key(workers[*best]);
        if (mine > theirs || (mine == theirs && w.name < workers[*best].name)) best = i;
    }
    return best;
}

}  // namespace infervisor
