// Sampling: reads one WorkerSample from a worker's cgroup directory, or one
// HostSample from procfs. Each file is read on its own; a missing file leaves
// its fields empty (this host's cgroup2 has no memory controller, older
// kernels lack memory.swap.* or the cpu "full" line) and never fails the
// whole sample. Other read or parse failures are listed in read_errors.
#pragma once

#include <filesystem>

#include "base/clock.h"
#include "cgroup/cgroup_stats.h"
#include "cgroup/stat_file_set.h"
#include "policy/samples.h"

namespace infervisor {

// Reads memory.{current,max,high,swap.current,swap.max,events,stat},
// {memory,cpu,io}.pressure and cpu.stat under `cgroup_dir`, each once,
// through CgroupStats (cgroup/cgroup_stats.h). The supervisor's
// fields (started_at, last_heartbeat, watchdog_interval) are left for the
// caller to fill in.
WorkerSample sample_worker(const std::filesystem::path& cgroup_dir, TimePoint now);
// The same through `stats`, e.g. one reading through held descriptors
// (CgroupStats over a StatFileSet: what the policy runner does every tick).
WorkerSample sample_worker(const CgroupStats& stats, TimePoint now);

// Adds what only the metrics show: memory.peak and pids.current (two more
// files per worker, read only when the metrics are rendered).
void sample_worker_extras(const std::filesystem::path& cgroup_dir, WorkerSample& sample);

// Reads {procfs}/pressure/{memory,cpu,io}, {procfs}/vmstat and
// {procfs}/meminfo.
HostSample sample_host(const std::filesystem::path& procfs, TimePoint now);
// The same through descriptors `procfs` holds (its dir() is the procfs root).
HostSample sample_host(StatFileSet& procfs, TimePoint now);

}  // namespace infervisor
