#include "probe/probe_tracker.h"

#include <algorithm>

#include "base/units.h"

namespace infervisor {

std::string_view probe_verdict_name(ProbeVerdict verdict) {
    switch (verdict) {
        case ProbeVerdict::unknown:
            return "unknown";
        case ProbeVerdict::passing:
            return "passing";
        case ProbeVerdict::failing:
            return "failing";
    }
    return "?";
}

ProbeTracker::ProbeTracker(ProbeSpec spec, const Clock& clock)
    : spec_(std::move(spec)), clock_(clock) {
    reset();
}

void ProbeTracker::reset() {
    verdict_ = ProbeVerdict::unknown;
    in_flight_ = false;
    next_due_ = clock_.now() + spec_.initial_delay;
    failures_in_row_ = successes_in_row_ = 0;
    attempts_ = failures_ = 0;
    last_outcome_.reset();
    last_failure_.reset();
    last_failure_at_.reset();
}

std::optional<TimePoint> ProbeTracker::next_attempt_at() const {
    if (in_flight_) return std::nullopt;
    return next_due_;
}

std::optional<TimePoint> ProbeTracker::begin_attempt() {
    if (in_flight_) return std::nullopt;
    in_flight_ = true;
    began_ = clock_.now();
    ++attempts_;
    return began_ + spec_.timeout;
}

std::optional<ProbeChange> ProbeTracker::finish_attempt(ProbeOutcome outcome) {
    if (!in_flight_) return std::nullopt;
    in_flight_ = false;
    const TimePoint now = clock_.now();
    outcome.latency = std::chrono::duration_cast<Duration>(now - began_);
    if (outcome.passed && outcome.latency > spec_.timeout) {
        outcome.passed = false;
        outcome.detail += " after " + format_duration(outcome.latency) + ", over the timeout of " +
                          format_duration(spec_.timeout);
    }
    next_due_ = std::max(began_ + spec_.interval, now);
    return count(outcome);
}

std::optional<ProbeChange> ProbeTracker::count(const ProbeOutcome& outcome) {
    last_outcome_ = outcome;
    ProbeVerdict to = verdict_;
    int64_t streak = 0;
    if (outcome.passed) {
        failures_in_row_ = 0;
        streak = ++successes_in_row_;
        if (streak >= spec_.success_threshold) to = ProbeVerdict::passing;
    } else {
        ++failures_;
        last_failure_ = outcome;
        last_failure_at_ = clock_.now();
        successes_in_row_ = 0;
        streak = ++failures_in_row_;
        if (spec_.failure_threshold > 0 && streak >= spec_.failure_threshold)
            to = ProbeVerdict::failing;
    }
    if (to == verdict_) return std::nullopt;
    ProbeChange change{verdict_, to, outcome, streak};
    verdict_ = to;
    return change;
}

}  // namespace infervisor
