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

// mlockall(MCL_CURRENT), then mlockall(MCL_FUTURE | MCL_ONFAULT): every page
// mapped now (the daemon's code and libraries, its heap) is read in and
// pinned, so that code first run in a thrash (the kill, the exit handling)
// does not have to be read back from disk or swap then; pages mapped later
// are pinned when first touched, so a thread's 8 MiB stack costs only what
// it uses. Needs CAP_IPC_LOCK or an unlimited RLIMIT_MEMLOCK (the unit has
// both): with a finite limit, MCL_FUTURE would turn later allocations into
// failures once the limit is reached, so nothing is locked then and the
// error says why.
//
// A locked heap keeps what it once held in RAM, so large blocks get
// mappings of their own (returned to the kernel when freed) and the heap's
// free top is given back above 128 KiB: memory used for a moment (a
// hostile `config check` text, a large reply) does not stay locked.
Result<void> lock_own_memory();

}  // namespace infervisor
