// WorkerHistory: a worker's recent samples and the policy actions on it, as
// `infervisorctl history` draws them, taken from the daemon's recording of
// its policy engine's input (policy/policy_trace.h). The daemon keeps no
// second copy: the CLI fetches the recording (the Trace call) and derives
// the history itself, so the daemon's memory holds each sample once, in the
// recording's compact encoding (about 11 bytes a worker's sample).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/policy_trace.h"

namespace infervisor {

// One sample. Sizes in KiB (32 bits: up to 4 TiB); a field the sample lacked
// is kNone. Percentages in hundredths of a percent (0-10000).
struct HistoryPoint {
    static constexpr uint32_t kNone = UINT32_MAX;
    static constexpr uint16_t kNoPercent = UINT16_MAX;

    int64_t time_ms = 0;  // CLOCK_REALTIME, milliseconds since the epoch
    uint32_t memory_kib = kNone;
    uint32_t memory_max_kib = kNone;  // kNone: no limit
    uint32_t memory_high_kib = kNone;
    uint32_t swap_kib = kNone;
    float swap_in_pages_per_s = -1;  // -1: unknown (first sample of a run)
    float growth_pct_per_min = 0;
    bool growth_known = false;
    uint16_t memory_some_avg10 = kNoPercent;
    uint16_t memory_full_avg10 = kNoPercent;
};

// A policy action on the worker, shown as a mark on the chart.
struct HistoryAction {
    int64_t time_ms = 0;
    std::string rule;
    std::string action;  // log, throttle, freeze, checkpoint, kill, ...
    bool dry_run = false;
};

struct WorkerHistory {
    // The daemon's sample interval as the recording shows it (the median
    // gap between its timed evaluations); 0 when it holds fewer than two.
    uint64_t interval_usec = 0;
    std::vector<HistoryPoint> points;    // oldest first
    std::vector<HistoryAction> actions;  // oldest first, from the first point's time on
};

// The newest `limit` samples of `worker` in `trace` (in time order, as
// decoded) and the policy actions on it since the first of them: every
// journaled one (TraceEventKind::action: the rules', resume_when's, the
// suspension ladder's, the watchdog's), or in a recording without those
// the engine's decisions.
WorkerHistory history_from_trace(const std::vector<TraceEntry>& trace, std::string_view worker,
                                 size_t limit);

// KiB from bytes, saturating below kNone; kNone for an empty value.
uint32_t to_kib(std::optional<uint64_t> bytes);
// Hundredths of a percent from a percentage, clamped to 0-100 %.
uint16_t to_centi_percent(std::optional<double> percent);

}  // namespace infervisor
