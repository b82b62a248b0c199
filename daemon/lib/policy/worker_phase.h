// WorkerPhase: is a run still loading its model, or serving?
//
// Why: growth rules judge a worker against its own steady state. A model
// filling memory at 100 MB/s from a small start is "fast growth" by any rate,
// so a growth rule that sees the load ramp kills innocent workers. The engine
// therefore feeds its growth tracker only with samples taken while the run is
// serving, the first of them being the worker's baseline; while the run is
// loading, memory.growth and memory.headroom are empty and a condition on
// them is false. A load cannot be taken for a leak by construction: not by a
// threshold, by the absence of the measurement.
//
// When a run is serving (PhaseTracker::observe):
// - A worker that signals readiness (WorkerSample::signals_readiness: notify,
//   or a startup/readiness probe): from WorkerSample::ready_at on. Before it
//   the run is loading, guarded by start_timeout and its cap.
// - Any other worker: once its memory stopped climbing. Precisely: samples
//   cover the last `settle` span (one at or before now - settle), and no
//   sample in that span is more than the settle band above the span's first
//   sample, where the band is max(8 MiB, 2% of memory.max — of memory.current
//   when there is no max). At the latest, `load_limit` after the start
//   (WorkerSample::load_limit, the worker's start_timeout; 0 = no limit): a
//   leak from the start never plateaus, and from then on growth rules judge
//   it. Until then it is held by its cap (memory.max) and by host rules,
//   which do not look at phases.
// A serving run stays serving: a later pause in growth is not a new load.
// Phase state is per run (PolicyEngine::forget() at each start).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "policy/samples.h"

namespace infervisor {

enum class WorkerPhase { loading, serving };

std::string_view phase_name(WorkerPhase phase);

struct PhaseOptions {
    Duration settle{20'000};  // memory must stay within the band this long
    double band_percent = 2.0;
    uint64_t band_min_bytes = 8ull << 20;
};

class PhaseTracker {
  public:
    explicit PhaseTracker(PhaseOptions options = {}) : options_(options) {}

    // Takes one sample (in time order) and returns the phase after it.
    WorkerPhase observe(const WorkerSample& sample);

    WorkerPhase phase() const { return phase_; }
    // When serving began (ready_at, the time memory settled, or the load
    // limit), and why: "ready", "memory settled", "load limit".
    std::optional<TimePoint> serving_since() const { return serving_since_; }
    const std::string& why() const { return why_; }
    // memory.current at the first serving sample: the worker's steady-state
    // size, what it needs to serve again after a restart.
    std::optional<uint64_t> baseline() const { return baseline_; }

  private:
    struct Point {
        TimePoint time;
        uint64_t value;
    };
    bool settled(const WorkerSample& sample);
    void serve(TimePoint since, std::string why, const WorkerSample& sample);

    PhaseOptions options_;
    WorkerPhase phase_ = WorkerPhase::loading;
    std::optional<TimePoint> serving_since_;
    std::string why_;
    std::optional<uint64_t> baseline_;
    std::deque<Point> recent_;  // loading samples over the settle span
};

}  // namespace infervisor
