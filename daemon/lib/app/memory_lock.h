// memory_lock: keep the daemon's own pages in RAM.
//
// The daemon is needed most when the host thrashes, and a supervisor whose
// code or heap was reclaimed waits on the same swap and disk it is meant to
// relieve: each page fault of its event loop queues behind the thrash, its
// actions come late, the thrash lasts longer, and systemd's watchdog may end
// up killing it (and with it every worker). earlyoom and oomd lock
// themselves in memory for the same reason.
#pragma once

#include "base/result.h"

namespace infervisor {

// mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT): every page this process
// has touched, and every page it touches later, stays in RAM. On fault, not
// all at once: pinning every page of every mapped library would double the
// daemon's RSS for code it never runs, while what its loop runs on every
// tick (sampling, policy evaluation) is pinned long before a thrash; a rare
// path (the kill itself) may still read its code in once. Needs CAP_IPC_LOCK or an unlimited RLIMIT_MEMLOCK
// (the unit has both): with a finite limit, MCL_FUTURE would turn later
// allocations into failures once the limit is reached, so nothing is
// locked then and the error says why.
Result<void> lock_own_memory();

}  // namespace infervisor
