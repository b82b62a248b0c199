// RuleTimer: the hysteresis of one rule for one subject (a worker, or the
// host for host rules). Pure: it sees only "is the condition true now" and
// the time.
//
// Contract:
//   - A rule fires when its condition has been true at every observation for
//     at least `hold` (the rule's `for`): the first true observation starts
//     the clock, one false observation stops it. With hold 0 the first true
//     observation fires.
//   - Having fired, the rule is latched: it does not fire again while the
//     condition stays true. It re-arms when the condition is observed false;
//     then it must again hold for the full `hold` before it fires.
//   - With a cooldown, a latched rule whose condition is still true fires
//     again (from the bottom of its ladder) `cooldown` after its last step.
//   - With an escalation, a latched rule whose condition has stayed true for
//     `escalate_after` since it fired takes its escalation step, once.
//   - due() only reports; commit() records that the step was taken. A caller
//     that cannot act (a host rule with no victim) does not commit, and the
//     step stays due.
#pragma once

#include <optional>

#include "base/clock.h"

namespace infervisor {

struct RuleTiming {
    Duration hold{0};
    std::optional<Duration> escalate_after;  // set only when the rule escalates
    std::optional<Duration> cooldown;
};

enum class RuleStep { fire, escalate, repeat };

class RuleTimer {
  public:
    struct Due {
        RuleStep step;
        Duration held;  // how long the condition has been true
    };

    void observe(bool condition, TimePoint now);
    std::optional<Due> due(const RuleTiming& timing, TimePoint now) const;
    void commit(RuleStep step, TimePoint now);

    bool latched() const { return fired_at_.has_value(); }

  private:
    std::optional<TimePoint> true_since_;
    std::optional<TimePoint> fired_at_;  // set while latched
    TimePoint last_step_at_{};
    bool escalated_ = false;
};

}  // namespace infervisor
