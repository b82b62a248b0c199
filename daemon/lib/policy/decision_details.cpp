#include "policy/decision_details.h"

#include <cmath>

#include "base/units.h"

namespace infervisor {

namespace {

std::string whole(uint64_t value) { return std::to_string(value); }

std::string seconds(Duration d) {
    return format_journal_value(MetricUnit::duration, static_cast<double>(d.count()));
}

// engine.NAME or engine.rate(NAME): the series in the sample's engine
// reading or in the rates derived from it.
Reading read_engine(const Condition& leaf, const WorkerInputs& in) {
    Reading out{engine_journal_key(leaf.engine_series, leaf.engine_rate), std::nullopt};
    const EngineSeries* series = leaf.engine_rate ? in.engine_rates : in.engine_values;
    if (!series) return out;
    if (auto it = series->find(leaf.engine_series); it != series->end()) out.value = it->second;
    return out;
}
Reading read_engine(const Condition&, const HostInputs&) { return {}; }  // worker rules only

template <class Inputs, class Find>
Readings read_with(const Condition& when, const Inputs& in, Find find) {
    Readings out;
    for (const Condition* leaf : comparisons(when)) {
        if (!leaf->engine_series.empty()) {
            out.push_back(read_engine(*leaf, in));
            continue;
        }
        const auto* metric = find(leaf->metric, leaf->unit);
        if (!metric) {
            out.push_back({});
            continue;
        }
        out.push_back({metric->info.journal_key, metric->measure(in)});
    }
    return out;
}

// The reading of the leaf `leaf` of `when`, found by its position.
std::optional<double> reading_of(const Condition& when, const Readings& readings,
                                 const Condition& leaf) {
    auto leaves = comparisons(when);
    for (size_t i = 0; i < leaves.size() && i < readings.size(); ++i)
        if (leaves[i] == &leaf) return readings[i].value;
    return std::nullopt;
}

// `value`: null when unknown (a pointer, not an optional: GCC 12 at -Os
// warns that an inlined optional<double> may be read uninitialised).
std::string describe_comparison(const Condition& c, const double* value) {
    if (c.unit == MetricUnit::flag) return c.metric;
    std::string shown = value ? format_measurement(c.unit, *value) : "unknown";
    return c.metric + " is " + shown + " (" + std::string(to_string(c.op)) + " " +
           c.threshold_text + ")";
}

std::string describe_node(const Condition& node, const Readings& readings, size_t& next) {
    if (node.kind == Condition::Kind::compare) {
        const std::optional<double>* value =
            next < readings.size() ? &readings[next].value : nullptr;
        ++next;
        return describe_comparison(node, value && value->has_value() ? &**value : nullptr);
    }
    std::string joiner = node.kind == Condition::Kind::all_of ? " and " : " or ";
    std::string out;
    for (const auto& operand : node.operands)
        out += (out.empty() ? "" : joiner) + describe_node(operand, readings, next);
    return out;
}

}  // namespace

RuleTiming timing_of(const RuleSpec& rule) {
    RuleTiming timing;
    timing.hold = rule.when.hold;
    if (rule.escalate_to) timing.escalate_after = rule.escalate_after.value_or(Duration(0));
    timing.cooldown = rule.cooldown;
    return timing;
}

Readings read_condition(const Condition& when, const WorkerInputs& in) {
    return read_with(when, in, find_worker_metric);
}

Readings read_condition(const Condition& when, const HostInputs& in) {
    return read_with(when, in, find_host_metric);
}

bool readings_hold(const Condition& when, const Readings& readings) {
    return condition_holds(when,
                           [&](const Condition& leaf) { return reading_of(when, readings, leaf); });
}

Decision start_decision(std::string worker, const RuleSpec& rule, RuleScope scope,
                        const RuleTimer::Due& due, const Readings& readings, bool dry_run) {
    Decision d;
    d.worker = std::move(worker);
    d.rule = rule.name;
    d.scope = scope;
    d.step = due.step;
    d.action = action_of(rule, due.step);
    d.then = rule.then;
    d.dry_run = dry_run;
    // A host rule on the GPUs alone (host.gpu.*) is not for the host's
    // memory: its suspension may move GPU memory into host memory, and a run
    // it ends restarts without waiting for host memory.
    d.for_memory = (scope == RuleScope::host && !only_metrics(rule.when, "host.gpu.")) ||
                   mentions_metric(rule.when, "memory.") || mentions_metric(rule.when, "swap.");
    d.for_gpu = mentions_metric(rule.when, "gpu.") || mentions_metric(rule.when, "host.gpu.");
    d.reason = describe_cause(rule, readings, due);
    return d;
}

Action action_of(const RuleSpec& rule, RuleStep step) {
    if (step == RuleStep::escalate && rule.escalate_to) return *rule.escalate_to;
    return rule.action;
}

std::optional<uint64_t> throttle_target(const ThrottleTarget& target, const WorkerSample& sample) {
    if (target.bytes) return target.bytes;
    std::optional<uint64_t> base = sample.memory_high  ? sample.memory_high
                                   : sample.memory_max ? sample.memory_max
                                                       : sample.memory_current;
    if (!base || !target.percent) return std::nullopt;
    return static_cast<uint64_t>(
        std::llround(static_cast<double>(*base) * *target.percent / 100.0));
}

std::string describe_cause(const RuleSpec& rule, const Readings& readings,
                           const RuleTimer::Due& due) {
    size_t next = 0;
    std::string cause = describe_node(rule.when, readings, next);
    if (rule.when.hold > Duration::zero()) cause += " for " + format_duration(due.held);
    switch (due.step) {
        case RuleStep::fire:
            return cause;
        case RuleStep::escalate:
            return "still true " + format_duration(rule.escalate_after.value_or(Duration(0))) +
                   " after " + std::string(to_string(rule.action)) + ": " + cause;
        case RuleStep::repeat:
            return "still true after the " + format_duration(rule.cooldown.value_or(Duration(0))) +
                   " cooldown: " + cause;
    }
    return cause;
}

void add_measurement(Measurements& out, const std::string& key, const std::string& value) {
    for (const auto& [k, v] : out)
        if (k == key) return;
    out.emplace_back(key, value);
}

void add_cause(Measurements& out, const RuleSpec& rule, const Readings& readings, Duration held) {
    auto leaves = comparisons(rule.when);
    for (size_t i = 0; i < leaves.size() && i < readings.size(); ++i)
        if (readings[i].value && !readings[i].journal_key.empty())
            add_measurement(out, readings[i].journal_key,
                            format_journal_value(leaves[i]->unit, *readings[i].value));
    const Condition& c = rule.when;
    if (c.is_compound()) {
        std::string text = c.text;
        if (auto at = text.rfind(" for "); c.hold > Duration::zero() && at != std::string::npos)
            text.resize(at);
        add_measurement(out, "CONDITION", text);
    } else if (c.unit != MetricUnit::flag) {
        add_measurement(out, "THRESHOLD", std::string(to_string(c.op)) + " " + c.threshold_text);
    }
    add_measurement(out, "HELD_SECONDS", seconds(held));
}

void add_worker_context(Measurements& out, const WorkerSample& s,
                        std::optional<double> growth_percent, const RuleSpec* rule, TimePoint now) {
    if (s.memory_current) add_measurement(out, "MEMORY_CURRENT_BYTES", whole(*s.memory_current));
    add_measurement(out, "MEMORY_MAX_BYTES", s.memory_max ? whole(*s.memory_max) : "max");
    add_measurement(out, "MEMORY_HIGH_BYTES", s.memory_high ? whole(*s.memory_high) : "max");
    if (s.swap_current) add_measurement(out, "SWAP_CURRENT_BYTES", whole(*s.swap_current));
    if (growth_percent)
        add_measurement(out, "MEMORY_GROWTH_PCT_PER_MIN",
                        format_journal_value(MetricUnit::percent_per_min, *growth_percent));
    // Where the host's GPUs are read: every decision on the worker says
    // what it held there (a kill for RAM may free a card too).
    if (s.gpu_memory) add_measurement(out, "GPU_MEMORY_BYTES", whole(*s.gpu_memory));
    if (s.gpu_memory_max) add_measurement(out, "GPU_MEMORY_MAX_BYTES", whole(*s.gpu_memory_max));
    if (rule && mentions_metric(rule->when, "heartbeat")) {
        if (auto age = heartbeat_age(s, now))
            add_measurement(out, "HEARTBEAT_AGE_SECONDS", seconds(*age));
        if (s.watchdog_interval)
            add_measurement(out, "WATCHDOG_SECONDS", seconds(*s.watchdog_interval));
    }
}

void add_phase(Measurements& out, const PhaseTracker& phase, TimePoint now) {
    add_measurement(out, "PHASE", std::string(phase_name(phase.phase())));
    if (!phase.serving_since()) return;
    add_measurement(out, "SERVING_SINCE_SECONDS",
                    seconds(std::chrono::duration_cast<Duration>(now - *phase.serving_since())));
    add_measurement(out, "SERVING_REASON", phase.why());
}

void add_host_context(Measurements& out, const HostInputs& host) {
    const HostSample& s = host.sample;
    if (s.mem_available) add_measurement(out, "HOST_MEM_AVAILABLE_BYTES", whole(*s.mem_available));
    if (s.mem_total) add_measurement(out, "HOST_MEM_TOTAL_BYTES", whole(*s.mem_total));
    if (auto headroom = host_mem_headroom(s, host.mem_available_change_per_minute))
        add_measurement(out, "HOST_MEM_HEADROOM_SECONDS", seconds(*headroom));
    if (s.swap_total) add_measurement(out, "HOST_SWAP_TOTAL_BYTES", whole(*s.swap_total));
    if (s.swap_free) add_measurement(out, "HOST_SWAP_FREE_BYTES", whole(*s.swap_free));
    if (s.gpu_memory_available) {
        add_measurement(out, "HOST_GPU_MEMORY_AVAILABLE_BYTES", whole(*s.gpu_memory_available));
        add_measurement(out, "HOST_GPU_DEVICE", s.gpu_device);
    }
    if (s.memory_pressure)
        add_measurement(out, "HOST_MEMORY_PRESSURE_SOME_AVG10_PCT",
                        format_journal_value(MetricUnit::percent, s.memory_pressure->some.avg10));
    if (host.swap_in_per_second)
        add_measurement(
            out, "HOST_SWAP_IN_PAGES_PER_SEC",
            format_journal_value(MetricUnit::pages_per_second, *host.swap_in_per_second));
    if (host.swap_out_per_second)
        add_measurement(
            out, "HOST_SWAP_OUT_PAGES_PER_SEC",
            format_journal_value(MetricUnit::pages_per_second, *host.swap_out_per_second));
}

}  // namespace infervisor
