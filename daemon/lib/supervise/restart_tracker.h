// RestartTracker: the pure part of "restart by policy" — whether an exit
// leads to a restart, after what backoff, and when the start limit (the
// circuit breaker against crash loops) trips. Time comes from a Clock.
#pragma once

#include <deque>
#include <optional>

#include "base/clock.h"
#include "config/worker_spec.h"

namespace infervisor {

enum class ExitClass {
    clean,    // exited with code 0
    failure,  // non-zero exit, killed by a signal, OOM-killed, failed to start
};

// What a tracker has counted, carried over a daemon restart (the state file,
// persisted_worker.h). Time points are CLOCK_MONOTONIC, which runs on
// across daemon runs within one boot.
struct RestartHistory {
    std::deque<TimePoint> starts;  // within start_limit_interval, oldest first
    std::optional<TimePoint> last_start;
    int consecutive_failures = 0;
    size_t total_restarts = 0;

    bool operator==(const RestartHistory&) const = default;
};

struct RestartVerdict {
    enum class Action { restart, stay_stopped, start_limit_hit } action;
    Duration delay{0};  // for restart: how long to wait first
    int attempt = 0;    // for restart: 1 for the first restart after a healthy run
};

class RestartTracker {
  public:
    RestartTracker(RestartSpec spec, const Clock& clock) : spec_(spec), clock_(clock) {}

    // Records a start. Returns false, recording nothing, when more than
    // start_limit_burst starts would fall within start_limit_interval.
    bool try_start();

    // Decides what follows an exit that was not asked for.
    RestartVerdict on_exit(ExitClass how);

    // An operator's explicit start clears the breaker and the backoff.
    void reset();

    RestartHistory history() const;
    // Takes over what an earlier daemon counted (at most start_limit_burst
    // starts are kept: more could never matter).
    void restore(const RestartHistory& history);

    int consecutive_failures() const { return consecutive_failures_; }
    size_t total_restarts() const { return total_restarts_; }

  private:
    void forget_old_starts(TimePoint now);

    RestartSpec spec_;
    const Clock& clock_;
    std::deque<TimePoint> starts_;
    std::optional<TimePoint> last_start_;
    int consecutive_failures_ = 0;
    size_t total_restarts_ = 0;
};

}  // namespace infervisor
