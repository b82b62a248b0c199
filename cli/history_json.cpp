#include "history_json.h"

namespace infervisor {

namespace {

using nlohmann::json;

json bytes(uint32_t kib) {
    if (kib == HistoryPoint::kNone) return nullptr;
    return static_cast<uint64_t>(kib) * 1024;
}

json percent(uint16_t centi) {
    if (centi == HistoryPoint::kNoPercent) return nullptr;
    return centi / 100.0;
}

json point_to_json(const HistoryPoint& p) {
    return {{"time_usec", p.time_ms * 1000},
            {"memory_current", bytes(p.memory_kib)},
            {"memory_max", bytes(p.memory_max_kib)},
            {"memory_high", bytes(p.memory_high_kib)},
            {"swap_current", bytes(p.swap_kib)},
            {"memory_pressure_some_avg10", percent(p.memory_some_avg10)},
            {"memory_pressure_full_avg10", percent(p.memory_full_avg10)},
            {"swap_in_pages_per_second",
             p.swap_in_pages_per_s < 0 ? json(nullptr) : json(p.swap_in_pages_per_s)},
            {"memory_growth_percent_per_min",
             p.growth_known ? json(p.growth_pct_per_min) : json(nullptr)}};
}

}  // namespace

json history_to_json(const WorkerHistory& history) {
    json samples = json::array();
    for (const auto& p : history.points) samples.push_back(point_to_json(p));
    json actions = json::array();
    for (const auto& a : history.actions)
        actions.push_back({{"time_usec", a.time_ms * 1000},
                           {"rule", a.rule},
                           {"action", a.action},
                           {"dry_run", a.dry_run}});
    return {{"interval_usec", history.interval_usec},
            {"samples", std::move(samples)},
            {"actions", std::move(actions)}};
}

}  // namespace infervisor
