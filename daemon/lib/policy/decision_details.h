// The parts of a Decision that are computed rather than copied: the action a
// step takes, the throttle target, the reason line and the measurements.
#pragma once

#include <optional>
#include <string>

#include "policy/decision.h"
#include "policy/metrics.h"
#include "policy/rule_spec.h"
#include "policy/rule_timer.h"
#include "policy/worker_phase.h"

namespace infervisor {

RuleTiming timing_of(const RuleSpec& rule);

// What one comparison of a condition measured.
struct Reading {
    std::string journal_key;  // the metric's (metrics.h); empty when it is unknown
    std::optional<double> value;
};
// One per comparison, in the order of comparisons(condition).
using Readings = std::vector<Reading>;

// Measures every comparison of `when` from the inputs.
Readings read_condition(const Condition& when, const WorkerInputs& in);
Readings read_condition(const Condition& when, const HostInputs& in);
// Whether `when` holds with these readings (condition_holds()).
bool readings_hold(const Condition& when, const Readings& readings);

// A decision for `rule`'s step, with its action, `then` and reason; the
// caller adds throttle target and measurements.
Decision start_decision(std::string worker, const RuleSpec& rule, RuleScope scope,
                        const RuleTimer::Due& due, const Readings& readings, bool dry_run);

// The rule's action, or its escalation's on an escalate step.
Action action_of(const RuleSpec& rule, RuleStep step);

// The new memory.high for a throttle: `target.bytes`, or `target.percent` of
// memory.high when finite, else of memory.max, else of memory.current.
std::optional<uint64_t> throttle_target(const ThrottleTarget& target, const WorkerSample& sample);

// "memory.growth is 117.19%/min (> 15%/min) for 2m0s" (the time it has held,
// shown for rules with a `for`), prefixed on later
// steps with "still true 30s after throttle: " or "still true after the 5m
// cooldown: ". A compound condition shows every comparison with its value,
// joined as written: "host.mem.available is 18.20% (< 25%) and
// host.mem.headroom is 9s (< 30s) for 8s".
std::string describe_cause(const RuleSpec& rule, const Readings& readings,
                           const RuleTimer::Due& due);

// Appends key=value unless the key is already there (the first one wins).
void add_measurement(Measurements& out, const std::string& key, const std::string& value);

// The measurements that decided (one field per comparison's metric) plus
// THRESHOLD ("> 40%"; a compound condition has CONDITION, the whole `when`,
// instead) and HELD_SECONDS.
void add_cause(Measurements& out, const RuleSpec& rule, const Readings& readings, Duration held);

// A worker's memory picture (current, max, high, swap, growth), and for a
// heartbeat rule its heartbeat age and watchdog interval.
void add_worker_context(Measurements& out, const WorkerSample& sample,
                        std::optional<double> growth_percent, const RuleSpec* rule, TimePoint now);

// PHASE=loading|serving, and once serving SERVING_SINCE_SECONDS (how long
// ago it began) and SERVING_REASON (ready, memory settled, load limit).
void add_phase(Measurements& out, const PhaseTracker& phase, TimePoint now);

// The host's memory and swap picture: MemAvailable, MemTotal,
// HOST_MEM_HEADROOM_SECONDS (while it falls), SwapTotal, SwapFree, memory
// pressure, swap traffic.
void add_host_context(Measurements& out, const HostInputs& host);

}  // namespace infervisor
