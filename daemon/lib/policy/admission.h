// Admission: whether a worker that declares what it needs (memory.reserve)
// fits on the host now, or must wait. Pure: numbers in, a verdict out.
//
// The rule: the host can give MemAvailable minus what running workers
// reserved but do not use yet, Σ max(0, reserve − memory.current). Their
// used memory is already missing from MemAvailable; the unused rest of
// their reserve is promised to them (a model still loading, a context still
// to grow). A worker fits when its reserve is at most what the host can
// give. Unknown MemAvailable (no /proc/meminfo) admits: nothing to judge by.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "policy/decision.h"

namespace infervisor {

// A running worker with a reserve.
struct ReservedWorker {
    std::string name;
    uint64_t reserve = 0;
    std::optional<uint64_t> memory_current;  // unknown: taken as 0 (all of it unused)
};

struct AdmissionVerdict {
    bool fits = true;
    uint64_t needs = 0;                     // the reserve asked for
    std::optional<uint64_t> mem_available;  // the host's MemAvailable
    uint64_t reserved_unused = 0;           // promised to running workers, not yet used
    std::optional<uint64_t> can_give;       // mem_available − reserved_unused (0 at least)
    std::string reason;                     // "needs 2G; the host can give 1.2G (...)"
    Measurements measurements;              // NEEDS_BYTES, HOST_MEM_AVAILABLE_BYTES, ...
};

AdmissionVerdict check_admission(uint64_t needs, std::optional<uint64_t> mem_available,
                                 const std::vector<ReservedWorker>& running);

}  // namespace infervisor
