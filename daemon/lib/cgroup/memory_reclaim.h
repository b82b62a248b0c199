// Memory reclaim of one cgroup: pushing its pages out (anonymous memory to
// swap, page cache dropped) so that the host gets the RAM back, as a
// suspended worker does (supervise/worker_suspension.h).
//
// How: memory.reclaim (kernel 5.19+) is written in steps of `step` bytes; on
// older kernels, where it is missing, memory.high is lowered in the same
// steps (a write of memory.high below memory.current reclaims down to it
// before it returns) and left there: the caller restores it (the returned
// memory_high_before) before it lets the cgroup run again, or its processes
// would be throttled at once.
//
// Contract: blocking. Every write makes the kernel reclaim synchronously, for
// as long as that takes (seconds under swap pressure): call it off the event
// loop. Bounded: it stops at the first step after `deadline` (a step itself
// is bounded by the kernel's retry limit), when a step frees nothing more
// (EAGAIN from memory.reclaim), or when memory.current reaches 0. It never
// throws and never touches anything but the cgroup's own files.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/clock.h"
#include "cgroup/cgroup_dir.h"

namespace infervisor {

enum class ReclaimMethod {
    memory_reclaim,  // memory.reclaim
    memory_high,     // memory.high lowered (kernels before 5.19)
    none,            // neither file is there (no memory controller)
};

std::string_view to_string(ReclaimMethod method);

struct ReclaimResult {
    ReclaimMethod method = ReclaimMethod::none;
    std::optional<uint64_t> memory_before;  // memory.current, bytes
    std::optional<uint64_t> memory_after;
    double seconds = 0;     // spent reclaiming
    int steps = 0;          // writes made
    bool complete = false;  // stopped because nothing more could go, not at the deadline
    // With ReclaimMethod::memory_high: memory.high as it was ("max" or
    // bytes), to write back before the cgroup runs again.
    std::optional<std::string> memory_high_before;
    std::string error;  // why it stopped early or did nothing; "" if it did not

    // memory_before - memory_after (0 when either is unknown or it grew).
    uint64_t bytes_reclaimed() const;
};

inline constexpr uint64_t kReclaimStep = 64ull << 20;

ReclaimResult reclaim_memory(const CgroupDir& dir, Duration deadline, uint64_t step = kReclaimStep);

}  // namespace infervisor
