// WorkerContext: what every Worker shares — the event loop, the cgroup tree,
// the paths, the event bus and the clock. Owned by the Supervisor; outlives
// its workers.
#pragma once

#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <functional>
#include <optional>
#include <vector>

#include "base/clock.h"
#include "base/paths.h"
#include "base/result.h"
#include "cgroup/cgroup_limits.h"
#include "cgroup/cgroup_tree.h"
#include "gpu/gpu_snapshot.h"
#include "journal/event_bus.h"
#include "policy/admission.h"
#include "workdir/workdir_manager.h"

namespace infervisor {

struct WorkerSpec;

struct WorkerContext {
    boost::asio::io_context& io;
    CgroupTree& cgroups;
    // Mount point of cgroup2: a worker's cgroup as /proc/PID/cgroup names it
    // is its directory relative to this.
    std::filesystem::path cgroup_mount;
    Paths paths;
    EventBus& events;
    // Work dirs: created, owned, locked and excluded from tmpfiles cleanup.
    WorkDirManager& workdirs;
    const Clock& clock;
    // Worker stdout/stderr go to the journal (identifier "infervisor-worker-NAME")
    // when true, else to the daemon's own stderr.
    bool output_to_journal = false;
    // Writes a new worker cgroup's limits. A seam so that lifecycle tests can
    // run on hosts whose cgroup2 has no memory controller (ours).
    using LimitsWriter =
        std::function<Result<std::vector<std::string>>(const CgroupDir&, const CgroupLimits&)>;
    LimitsWriter write_limits = apply_limits;
    // Whether a worker with a memory.reserve fits now (the Supervisor's
    // AdmissionQueue); empty: every worker starts at once.
    std::function<AdmissionVerdict(const WorkerSpec&)> admission;
    // The host is drained (Supervisor::drain): no run is launched, by an
    // operator's start or by a restart; empty: never drained.
    std::function<bool()> drained;
    // The host's GPUs at the last reading, for gpu.devices at a start
    // (services/gpu_watch.h devices_for_start(): an error with EWOULDBLOCK
    // while they are not known, and the start waits); empty: this daemon
    // reads no GPUs.
    std::function<Result<std::vector<GpuDevice>>()> gpu_devices;
    // What the processes of a cgroup (relative to the cgroup2 mount, with a
    // leading '/') hold on NVIDIA GPUs at the last reading, when it is recent
    // (services/gpu_watch.h memory_on()); empty: not known (no reading, or
    // this daemon reads no GPUs). A suspension's GPU release asks it.
    std::function<std::optional<uint64_t>(const std::string&)> nvidia_memory_of;
};

}  // namespace infervisor
