// Condition: the `when` of a rule, "METRIC OP VALUE [for DURATION]".
//
//   memory.pressure.some.avg10 > 40% for 10s
//   memory.growth > 15%/min for 2m
//   swap.in > 0 for 30s
//   host.mem.available < 5%
//   heartbeat missed
//
// OP is one of > >= < <=. VALUE is written in the metric's unit (see
// metrics.h); a metric with two units (memory.current in bytes or %) is
// resolved by how the value is written. Tokens are separated by spaces.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/result.h"
#include "policy/metrics.h"

namespace infervisor {

enum class Comparison { greater, greater_equal, less, less_equal };

std::string_view to_string(Comparison op);

struct Condition {
    std::string metric;  // catalogue name, e.g. "memory.growth"
    MetricUnit unit = MetricUnit::flag;
    Comparison op = Comparison::greater;
    double threshold = 0;        // in the unit's measure (% as 0-100, ms for durations)
    Duration hold{0};            // `for`: how long it must stay true
    std::string threshold_text;  // VALUE as written, for messages
    std::string text;            // the whole condition as written

    bool operator==(const Condition&) const = default;
};

// Parses `text` against the catalogue of `scope`. The error message is
// complete in itself ("unknown metric 'x'; known metrics: ...", "'memory.growth'
// is measured in a percentage per minute (e.g. 15%/min), not '15%'").
Result<Condition> parse_condition(std::string_view text, RuleScope scope);

// Whether `value` satisfies the comparison; an absent value never does.
bool condition_holds(const Condition& condition, std::optional<double> value);

}  // namespace infervisor
