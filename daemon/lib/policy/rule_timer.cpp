#include "policy/rule_timer.h"

namespace infervisor {

void RuleTimer::observe(bool condition, TimePoint now) {
    if (!condition) {
        true_since_.reset();
        fired_at_.reset();
        escalated_ = false;
        return;
    }
    if (!true_since_) true_since_ = now;
}

std::optional<RuleTimer::Due> RuleTimer::due(const RuleTiming& timing, TimePoint now) const {
    if (!true_since_) return std::nullopt;
    Duration held = std::chrono::duration_cast<Duration>(now - *true_since_);
    if (!fired_at_) {
        if (held >= timing.hold) return Due{RuleStep::fire, held};
        return std::nullopt;
    }
    if (timing.escalate_after && !escalated_ && now - *fired_at_ >= *timing.escalate_after)
        return Due{RuleStep::escalate, held};
    if (timing.cooldown && now - last_step_at_ >= *timing.cooldown)
        return Due{RuleStep::repeat, held};
    return std::nullopt;
}

void RuleTimer::commit(RuleStep step, TimePoint now) {
    last_step_at_ = now;
    if (step == RuleStep::escalate) {
        escalated_ = true;
        return;
    }
    fired_at_ = now;
    escalated_ = false;
}

}  // namespace infervisor
