// CgroupLimits: the resource caps written into a worker's cgroup before the
// worker runs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/units.h"
#include "cgroup/cgroup_dir.h"

namespace infervisor {

struct CgroupLimits {
    ByteLimit memory_max;
    ByteLimit memory_high;
    ByteLimit swap_max;
    std::optional<int64_t> pids_max;
    std::optional<int64_t> cpu_weight;

    bool operator==(const CgroupLimits&) const = default;
};

// Writes the limits and memory.oom.group=1 (an OOM kill takes the whole
// worker, never half of it). A file the kernel does not offer (e.g.
// memory.swap.max without swap accounting) is skipped and named in the
// returned warnings; any other failure is an error.
Result<std::vector<std::string>> apply_limits(const CgroupDir& dir, const CgroupLimits& limits);

// A memory limit of a running worker's cgroup that the daemon lowers, lifts
// and puts back (the throttle action, a suspension).
enum class MemoryLimit { high, swap_max };

// The limit as the kernel shows it: "max" or a number of bytes, kept as text
// so that putting it back writes exactly what was there.
Result<std::string> read_memory_limit(const CgroupDir& dir, MemoryLimit which);
// `value`: "max" or a number of bytes, as read_memory_limit() returned it.
Result<void> write_memory_limit(const CgroupDir& dir, MemoryLimit which, const std::string& value);
Result<void> write_memory_limit(const CgroupDir& dir, MemoryLimit which, uint64_t bytes);

}  // namespace infervisor
