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
};

// The index of the victim: unprotected workers only; the lowest priority;
// among equals the largest memory.current, then the fastest growth, then the
// first name in alphabetical order (so the choice is deterministic). Unknown
// memory or growth ranks below any known value. Empty when every worker is
// protected (or there are none).
std::optional<size_t> pick_victim(const std::vector<VictimView>& workers);

}  // namespace infervisor
