// RuleSpec: one policy rule as configured, plain data. See rule_config.h for
// the YAML that produces it and policy_engine.h for how it is applied.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "policy/condition.h"

namespace infervisor {

// The ladder, mildest first; escalation only climbs it.
enum class Action {
    log,         // journal the decision, nothing else
    throttle,    // lower memory.high (Decision::memory_high)
    freeze,      // cgroup.freeze = 1
    suspend,     // freeze, push its memory out to swap; resumed later (state `suspended`)
    checkpoint,  // ask the worker to checkpoint (signal + deadline)
    preempt,     // host rules: unload, suspend, checkpoint or kill, the gentlest
                 // that works on the victim (preempt_ladder.h); decided as one of those
    unload,      // the worker's inference server unloads its models and keeps
                 // running (Ollama); a preempt's step only, not a rule's action
    kill,        // cgroup.kill, then Then
};

// What follows a kill, or the stop after a checkpoint.
enum class Then {
    worker_policy,  // whatever the worker's restart policy says (default)
    restart,        // restart with backoff, whatever the restart policy says
    park,           // stay stopped until asked to start
    keep_running,   // checkpoint only: the worker is not stopped
};

std::string_view to_string(Action action);
std::string_view to_string(Then then);
std::optional<Action> parse_action(std::string_view text);
std::optional<Then> parse_then(std::string_view text);

// How far a throttle lowers memory.high: a fraction of the worker's current
// memory.high (when finite), else of memory.max, else of memory.current; or
// an absolute size.
struct ThrottleTarget {
    std::optional<double> percent;  // 0 < percent < 100
    std::optional<uint64_t> bytes;

    bool operator==(const ThrottleTarget&) const = default;
};

// Where a rule was written, for validation messages; not part of its identity.
struct RulePlace {
    std::string file;
    int line = 0;  // 1-based; 0 when unknown
    int column = 0;
};

struct RuleSpec {
    std::string name;
    bool enabled = true;  // false: removes a default rule of the same name
    Condition when;
    Action action = Action::log;
    Then then = Then::worker_policy;
    ThrottleTarget throttle_to{80.0, std::nullopt};
    std::optional<Duration> escalate_after;
    std::optional<Action> escalate_to;
    // While the condition stays true, fire again this long after the last
    // firing; empty: fire again only after the condition has cleared.
    std::optional<Duration> cooldown;
    bool dry_run = false;  // this rule only decides, never acts
    RulePlace place;

    // Everything but `place`: moving a rule in its file changes nothing.
    bool operator==(const RuleSpec& other) const;
};

}  // namespace infervisor
