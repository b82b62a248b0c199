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

}  // namespace infervisor
