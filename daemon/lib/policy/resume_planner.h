// ResumePlanner: when to bring back a worker that host pressure put aside —
// suspended, or parked after a kill or checkpoint by a host rule — and
// which one. Pure: host samples and the waiting workers in, at most one
// decision out; the clock is the caller's (`now`), so traces replay exactly.
//
// Contract, for `resume_when: CONDITION` (a host condition, condition.h),
// e.g. "host.mem.available > 2G for 1m":
//  - The condition must have held at every evaluation for its `for`, counted
//    from no earlier than the last preemption (preempted()) and the end of
//    the settle after the last resume. The pressure that put a worker aside
//    is therefore never what it is resumed into: the host must have shown
//    room for the whole `for` after it.
//  - One at a time: after a resume nothing else for `settle` (the resumed
//    worker pages its memory back in, or loads), then the `for` again.
//  - Highest priority first; among equals the one waiting longest, then the
//    first name. The chosen one must fit: what it needs (its memory before it
//    was suspended; a parked one's memory.reserve, else its memory.max) must
//    not exceed the host's MemAvailable now. When it does not fit, nobody is
//    resumed — no lower priority overtakes it — and the decision waits for
//    more room.
//  - Without a condition, or with nobody waiting, nothing is decided.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "policy/condition.h"
#include "policy/decision.h"
#include "policy/rate_tracker.h"
#include "policy/samples.h"

namespace infervisor {

// A worker waiting for room.
struct ResumeCandidate {
    std::string name;
    int priority = 0;
    TimePoint waiting_since{};
    std::optional<uint64_t> needs_bytes;  // empty: unknown, taken to fit
    std::string how;                      // "suspended", "parked", for messages
};

struct ResumeDecision {
    std::string worker;
    std::string reason;  // "host.mem.available is 3.1G (> 2G) for 1m0s; ..."
    Measurements measurements;
};

class ResumePlanner {
  public:
    // `when` empty: never resume by itself. `settle`: the wait after a resume.
    void configure(std::optional<Condition> when, Duration settle);
    const std::optional<Condition>& condition() const { return when_; }

    // A worker was preempted (suspended, killed or checkpointed for the host)
    // at `now`: the condition's `for` counts again from here.
    void preempted(TimePoint now);

    std::optional<ResumeDecision> evaluate(const HostSample& host,
                                           const std::vector<ResumeCandidate>& waiting,
                                           TimePoint now);

  private:
    std::optional<Condition> when_;
    Duration settle_{0};
    CounterRate swap_in_, swap_out_;
    GrowthTracker mem_available_{Duration(2'000)};  // host.mem.headroom, as PolicyOptions
    std::optional<TimePoint> true_since_;           // the condition has held since
    TimePoint not_before_{};                        // no count before: last preemption or settle
};

// The candidate resume_when picks first: highest priority, then waiting
// longest, then the first name. Empty for an empty list.
std::optional<size_t> first_to_resume(const std::vector<ResumeCandidate>& waiting);

}  // namespace infervisor
