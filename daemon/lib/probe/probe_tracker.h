// ProbeTracker: the pure state machine of one probe during one run of a
// worker — when the next attempt is due, whether an answer came in time, and
// when consecutive results flip the verdict. No I/O; time comes from an
// injected Clock, so thresholds, flapping and timeouts are unit-tested.
//
// Contract: attempts never overlap (begin_attempt() while one is in flight is
// refused). The first attempt is due initial_delay after reset(); each later
// one `interval` after the previous one began, and never before it finished.
// An answer that arrives after the attempt's deadline (begin + timeout) is a
// failure whatever it said. The verdict starts `unknown`; success_threshold
// passes in a row make it `passing`, failure_threshold failures in a row make
// it `failing` (a threshold of 0 never fails: the startup probe's "no limit
// but start_timeout"). A result that does not complete a streak leaves the
// verdict as it is, which is what keeps a flapping worker from flapping the
// verdict.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/clock.h"
#include "probe/probe_spec.h"

namespace infervisor {

enum class ProbeVerdict { unknown, passing, failing };
std::string_view probe_verdict_name(ProbeVerdict verdict);  // "unknown", "passing", "failing"

// One attempt's answer.
struct ProbeOutcome {
    bool passed = false;
    // What was seen, for people: "HTTP 200", "HTTP 503", "connect: Connection
    // refused", "no answer within 1s", "exited with code 1".
    std::string detail;
    std::optional<int> http_status;
    Duration latency{0};  // filled in by the tracker from begin to finish
};

struct ProbeChange {
    ProbeVerdict from = ProbeVerdict::unknown;
    ProbeVerdict to = ProbeVerdict::unknown;
    ProbeOutcome outcome;  // the answer that completed the streak
    int64_t streak = 0;    // how many results in a row made it
};

class ProbeTracker {
  public:
    ProbeTracker(ProbeSpec spec, const Clock& clock);

    // A new run began now: verdict unknown, streaks and history cleared.
    void reset();
    // When the next attempt may begin; nullopt while one is in flight.
    std::optional<TimePoint> next_attempt_at() const;
    // Starts an attempt now and returns its deadline; nullopt if one is
    // already in flight.
    std::optional<TimePoint> begin_attempt();
    // The in-flight attempt's answer. Returns the verdict change it caused.
    std::optional<ProbeChange> finish_attempt(ProbeOutcome outcome);

    const ProbeSpec& spec() const { return spec_; }
    bool in_flight() const { return in_flight_; }
    ProbeVerdict verdict() const { return verdict_; }
    int64_t consecutive_failures() const { return failures_in_row_; }
    int64_t consecutive_successes() const { return successes_in_row_; }
    uint64_t attempts() const { return attempts_; }
    uint64_t failures() const { return failures_; }
    const std::optional<ProbeOutcome>& last_outcome() const { return last_outcome_; }
    const std::optional<ProbeOutcome>& last_failure() const { return last_failure_; }
    std::optional<TimePoint> last_failure_at() const { return last_failure_at_; }

  private:
    std::optional<ProbeChange> count(const ProbeOutcome& outcome);

    ProbeSpec spec_;
    const Clock& clock_;
    ProbeVerdict verdict_ = ProbeVerdict::unknown;
    bool in_flight_ = false;
    TimePoint began_{};
    TimePoint next_due_{};
    int64_t failures_in_row_ = 0;
    int64_t successes_in_row_ = 0;
    uint64_t attempts_ = 0;
    uint64_t failures_ = 0;
    std::optional<ProbeOutcome> last_outcome_;
    std::optional<ProbeOutcome> last_failure_;
    std::optional<TimePoint> last_failure_at_;
};

}  // namespace infervisor
