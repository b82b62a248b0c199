// Decision: what the policy engine concluded, for the executor to carry out
// (or, when dry_run, only to journal) and for the journal to record.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "policy/preempt_ladder.h"
#include "policy/rule_spec.h"
#include "policy/rule_timer.h"

namespace infervisor {

// Journal-ready "KEY=value" pairs: keys are valid journal field names without
// a prefix (upper case, digits, '_'), e.g. MEMORY_GROWTH_PCT_PER_MIN=117.19.
using Measurements = std::vector<std::pair<std::string, std::string>>;

struct Decision {
    std::string worker;  // who is acted on; empty only for a host rule that
                         // logs while every worker is protected
    std::string rule;
    RuleScope scope = RuleScope::worker;
    RuleStep step = RuleStep::fire;  // first firing, escalation, or cooldown repeat
    Action action = Action::log;
    Then then = Then::worker_policy;  // what follows a kill or checkpoint
    // For throttle: the new memory.high in bytes. Empty when nothing to
    // compute it from is known (no memory.high, max or current).
    std::optional<uint64_t> memory_high;
    bool dry_run = false;  // journal it, do not act
    // Chosen by a host rule's `preempt` (preempt_ladder.h): a suspension that
    // frees (almost) nothing goes on to a kill.
    bool ladder = false;
    // The ladder's unload (Action::unload) that frees nothing goes on to this
    // step at once: what the ladder would have taken without it.
    std::optional<PreemptStep> if_unload_fails;
    // The rule acts for memory: a host rule (but one on host.gpu.* alone),
    // or a rule on a memory.* or swap.* metric. A run it ends restarts only
    // once the host has room; a suspension it asks for moves no GPU memory
    // into host memory.
    bool for_memory = false;
    // The rule reads GPU memory (gpu.*, host.gpu.*): a run it ends restarts
    // only once its devices have room for it again.
    bool for_gpu = false;
    std::string reason;  // one line for people, e.g.
                         // "memory.growth is 117.19%/min (> 15%/min) for 2m0s"
    Measurements measurements;
};

}  // namespace infervisor
