// view_of: a Worker as it looks from outside (view/worker_view.h). The one
// place a WorkerView is built: the control socket's status (services/
// supervisor_service.cpp) and the metrics' worker series (services/
// metrics_collector.cpp) both take theirs from here. A new shown field is
// added to WorkerView and filled here.
#pragma once

#include "base/clock.h"
#include "supervise/worker.h"
#include "view/worker_view.h"

namespace infervisor {

// What view_of reads besides the Worker itself.
enum class ViewReads {
    // The cgroup's use while the worker has a process: memory.current,
    // memory.peak, memory.swap.current, memory.pressure.
    usage,
    // Nothing: those stay empty. The metrics take a worker's use from the
    // policy round's samples; a scrape reads no more files for a view.
    none,
};

// The worker at `now`: its state and why, its run (pid, uptime, phase), its
// limits (from its spec) and use (from its cgroup, per `reads`), its last
// exit, status text, probes, and the checkpoint a checkpointed worker's next
// start restores.
WorkerView view_of(const Worker& worker, TimePoint now, ViewReads reads = ViewReads::usage);

}  // namespace infervisor
