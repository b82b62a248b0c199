// Condition: the `when` of a rule, comparisons joined by `and` and `or`, with
// one optional `for` at the end.
//
//   memory.pressure.some.avg10 > 40% for 10s
//   memory.growth > 15%/min for 2m
//   swap.in > 0 for 30s
//   host.mem.available < 5%
//   heartbeat missed
//   host.mem.available < 25% and host.mem.headroom < 30s for 8s
//   host.mem.available < 10% and host.swap.free < 10% or host.mem.available < 5%
//   engine.rate(llamacpp:tokens_predicted_total) == 0 and engine.llamacpp:requests_processing > 0
//   for 2m
//
// Grammar (tokens are separated by spaces):
//   condition   := disjunction [ "for" DURATION ]
//   disjunction := conjunction { "or" conjunction }
//   conjunction := comparison { "and" comparison }
//   comparison  := METRIC OP VALUE | "heartbeat missed"     (the flag: worker rules)
//   METRIC      := a catalogue name (metrics.h) | "engine." NAME | "engine.rate(" NAME ")"
//   OP          := > | >= | < | <= | == | !=
// `and` binds tighter than `or`; there are no parentheses (write "(A or B)
// and C" as "A and C or B and C"). The one `for` binds to the whole
// expression: the expression as a whole must have been true at every
// evaluation for that long (rule_timer.h). VALUE is written in the metric's
// unit (see metrics.h); a metric with two units (memory.current in bytes or %)
// is resolved by how the value is written. A comparison whose metric the
// sample lacks is false (so `A or B` holds on B alone when A is unknown).
//
// engine.NAME and engine.rate(NAME) (worker rules only) name a series of the
// worker's own metrics endpoint (engine.metrics, engine/engine_spec.h): NAME
// is a Prometheus metric name, read as the sum over all its label sets (no
// label selectors); engine.NAME is its value at the last scrape (a gauge),
// engine.rate(NAME) its increase per second between the last two scrapes (a
// counter). VALUE is a plain non-negative number. The server defines its
// names, so NAME is not checked here: a series that never shows is
// journaled once per run instead (engine-series-absent).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "policy/metrics.h"

namespace infervisor {

enum class Comparison { greater, greater_equal, less, less_equal, equal, not_equal };

std::string_view to_string(Comparison op);

// At most this many comparisons in one condition.
inline constexpr std::size_t kMaxComparisons = 16;

// One node of the expression tree. A `compare` node is a leaf: METRIC OP
// VALUE (a flag such as `heartbeat missed` is "> 0"). An `all_of` (and) or
// `any_of` (or) node has two or more operands and no leaf fields. `hold` and
// the whole `text` are set on the root only.
struct Condition {
    enum class Kind { compare, all_of, any_of };
    Kind kind = Kind::compare;

    std::string metric;  // catalogue name, e.g. "memory.growth"
    MetricUnit unit = MetricUnit::flag;
    Comparison op = Comparison::greater;
    double threshold = 0;        // in the unit's measure (% as 0-100, ms for durations)
    std::string threshold_text;  // VALUE as written, for messages

    // engine.NAME / engine.rate(NAME): the series' name (empty for catalogue
    // metrics) and whether its rate is meant.
    std::string engine_series;
    bool engine_rate = false;

    std::vector<Condition> operands;  // all_of / any_of

    Duration hold{0};  // `for`: how long it must stay true
    std::string text;  // as written: the whole condition at the root, the comparison at a leaf

    bool operator==(const Condition&) const = default;

    bool is_compound() const { return kind != Kind::compare; }
};

// The leaves of `condition`, left to right.
std::vector<const Condition*> comparisons(const Condition& condition);

// Whether any comparison's metric starts with `prefix` ("memory.", "heartbeat").
bool mentions_metric(const Condition& condition, std::string_view prefix);
// Whether every metric the condition reads starts with `prefix`.
bool only_metrics(const Condition& condition, std::string_view prefix);

// The engine series the condition names (engine.NAME, engine.rate(NAME)), in
// order, each once.
std::vector<std::string> engine_series_of(const Condition& condition);

// Parses `text` against the catalogue of `scope`. The error message is
// complete in itself ("unknown metric 'x'; known metrics: ...", "'memory.growth'
// is measured in a percentage per minute (e.g. 15%/min), not '15%'") and
// names the word it is about.
Result<Condition> parse_condition(std::string_view text, RuleScope scope);

// Whether `value` satisfies the comparison of the leaf `condition`; an
// absent value never does.
bool condition_holds(const Condition& condition, std::optional<double> value);

// A leaf's value, as measured by the caller.
using MeasureComparison = std::function<std::optional<double>(const Condition& leaf)>;

// Whether the expression holds, each leaf measured by `measure`.
bool condition_holds(const Condition& condition, const MeasureComparison& measure);

}  // namespace infervisor
