// The daemon's own CPU time (getrusage) and resident memory
// ({procfs}/self/statm), for infervisor_daemon_* series.
#pragma once

#include <filesystem>

#include "metrics/supervisor_metrics.h"

namespace infervisor {

// start_time_seconds is left for the caller.
DaemonStats read_own_stats(const std::filesystem::path& procfs);

}  // namespace infervisor
