// WorkerView: one worker as it looks from outside — its state and why, its
// run, its limits and use, its checkpoint, its probes. The one model the
// Varlink reply (control/status_json.cpp), the metrics' worker labels
// (metrics/supervisor_metrics.cpp) and infervisorctl (cli/) are derived
// from. Built in one place, view_of() (supervise/worker_view_of.h); a new
// shown field is added here and filled there, then rendered where it is
// shown.
//
// Plain data: this area uses nothing above base, so every area that shows a
// worker can use it.
#pragma once

#include <sys/types.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "view/gpu_card_view.h"

namespace infervisor {

// One health probe of a worker (see probe/probe_spec.h).
struct ProbeStatus {
    std::string probe;    // startup, readiness or liveness
    std::string target;   // "GET http://127.0.0.1:8080/health", "TCP ...", "exec ..."
    std::string verdict;  // unknown, passing or failing
    bool active = false;  // being probed now (startup stops once passed)
    int64_t consecutive_failures = 0;
    uint64_t failures = 0;                    // in the current (or last) run
    std::optional<std::string> last_failure;  // its answer, e.g. "HTTP 503"
    std::optional<int64_t> last_failure_http_status;
    std::optional<uint64_t> last_failure_age_usec;  // how long ago

    bool operator==(const ProbeStatus&) const = default;
};

// The checkpoint a checkpointed worker's next start restores.
struct CheckpointStatus {
    std::string path;
    std::optional<uint64_t> bytes;  // null when it could not be measured
    uint64_t age_usec = 0;          // since it was written

    bool operator==(const CheckpointStatus&) const = default;
};

// One worker as `infervisorctl status` shows it. Optional members are null
// when unknown or not applicable (no process, controller missing); for the
// limits (high, max, swap_max) null means "max", i.e. no limit.
struct WorkerView {
    std::string name;
    // One of kShownStates: stopped, starting, running, stopping, backoff,
    // failed, parked, suspended, waiting, checkpointed (parked after the
    // checkpoint its rule asked for: supervise/worker_state.h)
    std::string state;
    // Why it is in that state ("rule 'host-thrash'", "infervisorctl"); "" if
    // there is nothing to say. A suspended worker's says who suspended it.
    std::string state_reason;
    std::optional<uint64_t> state_age_usec;  // in that state since
    std::optional<pid_t> main_pid;
    std::optional<uint64_t> uptime_usec;  // of the current process
    uint64_t restarts = 0;
    std::optional<uint64_t> memory_current;
    std::optional<uint64_t> memory_high;
    std::optional<uint64_t> memory_max;
    std::optional<uint64_t> memory_peak;
    std::optional<uint64_t> swap_current;
    std::optional<uint64_t> swap_max;
    std::optional<double> memory_pressure_some_avg10;  // percent, from memory.pressure
    // GPU memory its processes hold (bytes, summed over cards) and their
    // compute use (% of one GPU) at the policy's last sample; empty where
    // the host's GPUs are not read or the worker has no process.
    std::optional<uint64_t> gpu_memory;
    std::optional<double> gpu_utilization;
    std::optional<uint64_t> gpu_memory_max;  // gpu.memory_max; empty: no cap
    std::vector<GpuCardUse> gpu_devices;     // gpu_memory card by card
    std::string last_exit;      // e.g. "exited 0", "killed by SIGKILL (memory.max)"; "" if none
    std::string status_text;    // the worker's last STATUS= notification; "" if none
    bool is_protected = false;  // exempt from policy kills
    std::vector<ProbeStatus> probes;  // empty (null on the wire) without probes
    // The policy's phase of the current run: "loading" (its memory may climb
    // freely: growth rules wait) or "serving"; "" when not running or not
    // evaluated yet.
    std::string phase;
    std::optional<CheckpointStatus> checkpoint;  // state checkpointed only

    bool operator==(const WorkerView&) const = default;
};

// The values WorkerView::state takes, in order: WorkerState's names
// (supervise/worker_state.h), then the names only shown (checkpointed). The
// metrics' state label has one series for each; a test holds the list to
// WorkerState.
inline constexpr std::array<std::string_view, 10> kShownStates = {
    "stopped", "starting", "running",   "stopping", "backoff",
    "failed",  "parked",   "suspended", "waiting",  "checkpointed"};

// The ages and durations of a view: whole microseconds, never negative.
uint64_t usec_of(std::chrono::nanoseconds d);
// From `since` to `now`; 0 when `since` is later.
uint64_t age_usec(TimePoint since, TimePoint now);

}  // namespace infervisor
