// Rule configuration: YAML → RuleSpec, a separate validation step, and the
// merge of the defaults with a worker's own rules.
//
//   rules:                              # a worker's, or the defaults for all
//     - name: runaway-growth            # required, unique in its list
//       when: memory.growth > 15%/min for 2m    # required; see condition.h
//       action: kill                    # required: log|throttle|freeze|suspend|
//                                       #   checkpoint|kill (host rules: also
//                                       #   preempt, preempt_ladder.h)
//       then: restart                   # after a kill: restart|park
//                                       #   (absent: the worker's restart policy)
//     - name: pressure
//       when: memory.pressure.some.avg10 > 40% for 10s
//       action: throttle
//       throttle_to: 80%                # % of memory.high/max/current, or a size; default 80%
//       escalate_after: 30s             # still true this long after firing ...
//       escalate_to: kill               # ... then this (higher on the ladder)
//       cooldown: 5m                    # fire again while still true (default: not
//                                       #   until the condition has cleared)
//       dry_run: true                   # decide and journal, never act
//     - name: stuck
//       enabled: false                  # drop the default rule 'stuck' for this worker
//   host_rules:                         # same shape, host.* metrics; the action
//     - name: host-thrash               #   hits one victim worker
//       when: host.swap.in > 0 for 30s
//       action: kill
//       cooldown: 1m
//
// Parsing records every problem in ConfigErrors at the offending node
// (file:line:column of the `when` scalar for condition errors) and returns
// the rules it could read; call validate_rules() on the result.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <vector>

#include "policy/rule_spec.h"
#include "yaml/config_errors.h"

namespace infervisor {

// Rules in one list (a worker's, the defaults', host_rules); a longer list
// is an error at the list.
inline constexpr std::size_t kMaxRules = 64;

// `node` is the list under `rules:` (a null node is an empty list).
std::vector<RuleSpec> parse_rules(const YAML::Node& node, ConfigErrors& errors,
                                  RuleScope scope = RuleScope::worker);

// The list under `host_rules:`.
std::vector<RuleSpec> parse_host_rules(const YAML::Node& node, ConfigErrors& errors);

// Checks what no single key can: unique names, escalate_after together with
// escalate_to, escalation climbing the ladder, `then` only with a kill,
// positive cooldowns.
void validate_rules(const std::vector<RuleSpec>& rules, ConfigErrors& errors);

// A worker's effective rules: the defaults, where a rule of the worker with
// the same name replaces the default in place (or removes it when disabled),
// followed by the worker's other enabled rules. Disabled rules never remain.
std::vector<RuleSpec> merge_rules(const std::vector<RuleSpec>& defaults,
                                  const std::vector<RuleSpec>& own);

}  // namespace infervisor
