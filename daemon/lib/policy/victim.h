// Victim selection for host rules: which worker pays when the host as a
// whole is in trouble.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/units.h"
#include "policy/preempt_ladder.h"

namespace infervisor {

// A worker as the supervisor knows it, offered to host rules.
struct WorkerCandidate {
    std::string name;
    int priority = 0;           // higher = more valuable = chosen later
    bool is_protected = false;  // never chosen
    PreemptFacts preempt;       // what a host rule's `preempt` may do with it
};

// A candidate with what the engine measured of it.
struct VictimView {
    std::string name;
    int priority = 0;
    bool is_protected = false;
    std::optional<uint64_t> memory_current;
    // memory.growth (serving runs only), for the journal and the last tie-break.
    std::optional<double> growth_percent_per_min;
    // How fast the worker's memory grew over the recent window (the engine's
    // victim window, 10s at the shipped sample_interval), in bytes per minute: its anonymous memory
    // (memory.stat anon; memory.current where anon is unknown), loading or serving alike, so a
    // worker still in its load is seen growing too. Empty before the samples span half the window.
    std::optional<double> growth_bytes_per_min = std::nullopt;
    // memory.stat anon: what the worker holds that the kernel cannot drop.
    std::optional<uint64_t> memory_anon = std::nullopt;
    std::optional<uint64_t> memory_unevictable = std::nullopt;
    PreemptFacts preempt = {};
    // Set for a host rule on the GPUs alone: the card whose memory runs
    // short ("0000:03:00.0"). Then memory_current is what the worker holds
    // on that card, growth_bytes_per_min its GPU memory's growth (every
    // phase), and the other figures are empty.
    std::string gpu_device = "";
};

// Growth at or above this marks a worker as the likely cause of the host's
// trouble: ~1 MiB/s, far above a serving worker's noise. Below it a worker
// counts as holding still.
inline constexpr double kRunawayGrowthBytesPerMin = 64.0 * 1024 * 1024;

// The worker's size for victim choice: anon when known, else memory.current.
std::optional<uint64_t> victim_size(const VictimView& view);

// The index of the victim: unprotected workers only; the lowest priority;
// among equals a worker growing at kRunawayGrowthBytesPerMin or faster
// before one that is not, the fastest in bytes first (the cause, not the
// large worker next to it that holds still; a worker still loading counts as
// growing too), then the largest (victim_size()), then the fastest
// memory.growth in percent, then the first name in alphabetical order (so
// the choice is deterministic). Unknown size or growth ranks below any known
// value. Empty when every worker is protected (or there are none).
std::optional<size_t> pick_victim(const std::vector<VictimView>& workers);

// Why workers[chosen] was chosen, for the journal (VICTIM_REASON): "growing
// 19.8 MiB/s (anon 412 MiB); others: server +0.0 MiB/s 368 MiB"; on a GPU
// "growing 19.8 MiB/s (GPU memory on 0000:03:00.0 12288.0 MiB); ...".
std::string explain_victim(const std::vector<VictimView>& workers, size_t chosen);

}  // namespace infervisor
