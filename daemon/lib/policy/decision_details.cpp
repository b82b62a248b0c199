#include "policy/decision_details.h"

#include <cmath>

#include "base/units.h"

namespace infervisor {

namespace {

std::string whole(uint64_t value) { return std::to_string(value); }

std::string seconds(Duration d) {
    return format_journal_value(MetricUnit::duration, static_cast<double>(d.count()));
}

}  // namespace

RuleTiming timing_of(const RuleSpec& rule) {
    RuleTiming timing;
    timing.hold = rule.when.hold;
    if (rule.escalate_to) timing.escalate_after = rule.escalate_after.value_or(Duration(0));
    timing.cooldown = rule.cooldown;
    return timing;
}

Decision start_decision(std::string worker, const RuleSpec& rule, RuleScope scope,
                        const RuleTimer::Due& due, std::optional<double> value, bool dry_run) {
    Decision d;
    d.worker = std::move(worker);
    d.rule = rule.name;
    d.scope = scope;
    d.step = due.step;
    d.action = action_of(rule, due.step);
    d.then = rule.then;
    d.dry_run = dry_run;
    d.for_memory = scope == RuleScope::host || rule.when.metric.rfind("memory.", 0) == 0 ||
                   rule.when.metric.rfind("swap.", 0) == 0;
    d.reason = describe_cause(rule, value, due);
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

std::string describe_cause(const RuleSpec& rule, std::optional<double> value,
                           const RuleTimer::Due& due) {
    const Condition& c = rule.when;
    std::string cause;
    if (c.unit == MetricUnit::flag) {
        cause = c.metric;
    } else {
        std::string shown = value ? format_measurement(c.unit, *value) : "unknown";
        cause = c.metric + " is " + shown + " (" + std::string(to_string(c.op)) + " " +
                c.threshold_text + ")";
    }
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

void add_cause(Measurements& out, const RuleSpec& rule, const std::string& journal_key,
               std::optional<double> value, Duration held) {
    const Condition& c = rule.when;
    if (value) add_measurement(out, journal_key, format_journal_value(c.unit, *value));
    if (c.unit != MetricUnit::flag)
        add_measurement(out, "THRESHOLD", std::string(to_string(c.op)) + " " + c.threshold_text);
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
    if (rule && rule->when.metric.rfind("heartbeat", 0) == 0) {
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
