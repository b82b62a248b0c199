// RestartRoom: no restart into the same pressure.
//
// A run that ended for memory — any OOM kill (host-wide or at its own
// memory.max), a host rule's kill, a rule on a memory or swap metric — is
// restarted only once the host has room for the worker again: MemAvailable
// (/proc/meminfo) of at least what it needs plus a reserve of 10% of
// MemTotal, so that even at its need the host stays clear of the low-memory
// host rule. What it needs: after a run that the host ran out of memory
// under (a host rule's kill, a host-wide OOM kill), its peak: back at that
// size the host would run out again; if that run was still loading (it
// never began serving), its memory.max: its peak is only how far the load
// got; after a run ended for its own growth
// (a rule on its own memory, an OOM kill at its memory.max), its serving
// baseline (memory.current when the run began serving, worker_phase.h: what
// it takes to serve again; a leak's peak is not). Its peak is the smaller of
// its memory.max and the peak of its last run (whichever is known), and a
// run that never served needs its peak either way. At most 80% of MemTotal:
// a worker capped above anything the host can ever offer is not held
// forever.
//
// The clock's backoff comes first; then the restart waits, re-reading
// /proc/meminfo every kRoomPoll, and the journal says why
// (restart-waiting-for-memory, once per wait). An explicit start does not
// wait. Without a readable /proc/meminfo there is nothing to judge by and
// the restart goes ahead.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "gpu/gpu_snapshot.h"
#include "policy/stat_files.h"

namespace infervisor {

inline constexpr Duration kRoomPoll{2000};

// What a worker needs before it may restart; empty when neither is known.
std::optional<uint64_t> room_needed(std::optional<uint64_t> memory_max,
                                    std::optional<uint64_t> last_peak);

// How a run ended for memory, as far as its restart's room goes.
struct EndedRun {
    std::optional<uint64_t> memory_max;        // its cap
    std::optional<uint64_t> peak;              // memory.peak of the run
    std::optional<uint64_t> serving_baseline;  // empty: it never began serving
    bool host_ran_out = false;                 // a host rule's kill, a host-wide OOM kill
};

// What it needs to restart (see above); empty when nothing is known.
std::optional<uint64_t> room_needed_after(const EndedRun& run);

struct RoomVerdict {
    bool fits = true;
    uint64_t needed = 0;                // after the 80% bound
    uint64_t wanted_available = 0;      // needed + reserve
    std::optional<uint64_t> available;  // MemAvailable, when known
};

RoomVerdict judge_room(uint64_t needed, const MemInfo& host);

// GPU room, after a run a rule on GPU memory ended: what it held, and where.
struct GpuRoomNeeded {
    uint64_t bytes = 0;
    std::vector<std::string> devices;  // PCI addresses
};

struct GpuRoomVerdict {
    bool fits = true;
    uint64_t needed = 0;     // after the 80% bound
    uint64_t available = 0;  // free on its devices together
    std::string why;         // !fits: in words, e.g. "0000:03:00.0 is in error: ..."
};

// Whether `host` (the GPUs at the last reading) has room on `needed.devices`
// together for `needed.bytes` (at most 80% of their memory: a worker that
// held nearly a whole card is not held forever by the driver's own
// reserve). A device in error does not fit: the worker is not restarted
// onto a broken card. A device not in the list, or one without figures,
// gives nothing to judge by: it fits.
GpuRoomVerdict judge_gpu_room(const GpuRoomNeeded& needed, const std::vector<GpuDevice>& host);

}  // namespace infervisor
