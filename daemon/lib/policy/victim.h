// Victim selection for host rules: which worker pays when the host as a
// whole is in trouble.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/units.h"

namespace infervisor {

// A worker as the supervisor knows it, offered to host rules.
struct WorkerCandidate {
    std::string name;
    int priority = 0;           // higher = more valuable = chosen later
    bool is_protected = false;  // never chosen
};

// A candidate with what the engine measured of it.
struct VictimView {
    std::string name;
    int priority = 0;
    bool is_protected = false;
    std::optional<uint64_t> memory_current;
    std::optional<double> growth_percent_per_min;
    // memory.growth in bytes: empty while loading (growth is judged from a
    // serving run's samples only) or before enough samples.
    std::optional<double> growth_bytes_per_min = std::nullopt;
};

// Growth at or above this marks a worker as the likely cause of the host's
// trouble: ~1 MiB/s, far above a serving worker's noise.
inline constexpr double kRunawayGrowthBytesPerMin = 64.0 * 1024 * 1024;

// The index of the victim: unprotected workers only; the lowest priority;
// among equals a worker growing at kRunawayGrowthBytesPerMin or faster
// before one that is not (the fastest in bytes first: the leak, not the
// large worker next to it that holds still), then the largest
// memory.current, then the fastest growth in percent, then the first name
// in alphabetical order (so the choice is deterministic). Unknown memory or
// growth ranks below any known value. Empty when every worker is protected
// (or there are none).
std::optional<size_t> pick_victim(const std::vector<VictimView>& workers);

}  // namespace infervisor
