// The exec probe: a command run as the worker's user in a cgroup of its own
// (memory.max, memory.swap.max 0 and pids.max written before it starts),
// passing when it exits 0.
//
// Contract: see ProbeAttempt. At the deadline (and on cancel()) the probe's
// whole cgroup is killed (cgroup.kill), so a hanging command and anything
// it forked go; `done` runs only once the cgroup is empty and removed, so an
// attempt never outlives itself and never piles up beside the next. The
// child is always reaped, also after cancel(). The cgroup's parent must
// offer the memory and pids controllers (see prepare_probe_parent).
#pragma once

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>

#include "cgroup/cgroup_dir.h"
#include "cgroup/cgroup_limits.h"
#include "probe/probe_attempt.h"
#include "process/spawn_request.h"

namespace infervisor {

struct ExecProbeSetup {
    // argv, environment, credentials, working directory; cgroup_fd and the
    // standard streams are set by the probe (stdio: /dev/null).
    SpawnRequest request;
    CgroupDir cgroup;  // created for the attempt, removed after it
    CgroupLimits caps;
    // Writes the caps (apply_limits; a recorder in tests on hosts without a
    // cgroup2 memory controller).
    std::function<Result<std::vector<std::string>>(const CgroupDir&, const CgroupLimits&)>
        write_caps = apply_limits;
};

std::shared_ptr<ProbeAttempt> start_exec_probe(boost::asio::io_context& io, ExecProbeSetup setup,
                                               Duration timeout, ProbeDone done);

// Creates `parent` (the daemon's probes/ cgroup) if missing and enables the
// memory and pids controllers for its children.
Result<void> prepare_probe_parent(const CgroupDir& parent);

}  // namespace infervisor
