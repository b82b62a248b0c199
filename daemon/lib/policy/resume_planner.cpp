#include "policy/resume_planner.h"

#include <algorithm>
#include <tuple>

#include "base/units.h"
#include "policy/decision_details.h"
#include "policy/metrics.h"

namespace infervisor {

std::optional<size_t> first_to_resume(const std::vector<ResumeCandidate>& waiting) {
    if (waiting.empty()) return std::nullopt;
    auto earlier = [](const ResumeCandidate& a, const ResumeCandidate& b) {
        return std::make_tuple(-a.priority, a.waiting_since, a.name) <
               std::make_tuple(-b.priority, b.waiting_since, b.name);
    };
    return static_cast<size_t>(std::min_element(waiting.begin(), waiting.end(), earlier) -
                               waiting.begin());
}

void ResumePlanner::configure(std::optional<Condition> when, Duration settle) {
    if (when != when_) true_since_.reset();
    when_ = std::move(when);
    settle_ = settle;
}

void ResumePlanner::preempted(TimePoint now) {
    not_before_ = std::max(not_before_, now);
    true_since_.reset();
}

std::optional<ResumeDecision> ResumePlanner::evaluate(const HostSample& host,
                                                      const std::vector<ResumeCandidate>& waiting,
                                                      TimePoint now) {
    if (host.pswpin) swap_in_.add(host.time, *host.pswpin);
    if (host.pswpout) swap_out_.add(host.time, *host.pswpout);
    if (!when_) return std::nullopt;
    if (host.mem_available) mem_available_.add(host.time, static_cast<double>(*host.mem_available));
    const HostInputs in{host, swap_in_.per_second(), swap_out_.per_second(),
                        mem_available_.per_minute()};
    const Readings readings = read_condition(*when_, in);
    if (!readings_hold(*when_, readings) || now < not_before_) {
        true_since_.reset();
        return std::nullopt;
    }
    if (!true_since_) true_since_ = now;
    Duration held = std::chrono::duration_cast<Duration>(now - *true_since_);
    if (held < when_->hold) return std::nullopt;
    auto first = first_to_resume(waiting);
    if (!first) return std::nullopt;
    const ResumeCandidate& c = waiting[*first];
    if (c.needs_bytes && host.mem_available && *c.needs_bytes > *host.mem_available)
        return std::nullopt;  // waits for more room; nobody overtakes it

    RuleSpec rule;
    rule.name = "resume_when";
    rule.when = *when_;
    ResumeDecision d;
    d.worker = c.name;
    Duration waited = std::chrono::duration_cast<Duration>(now - c.waiting_since);
    d.reason = describe_cause(rule, readings, {RuleStep::fire, held}) + "; resuming '" + c.name +
               "' (priority " + std::to_string(c.priority) + ", " + c.how + " for " +
               format_duration(waited) +
               (c.needs_bytes ? ", needs " + format_size(*c.needs_bytes) : std::string()) + ")";
    add_cause(d.measurements, rule, readings, held);
    add_measurement(d.measurements, "PRIORITY", std::to_string(c.priority));
    add_measurement(d.measurements, "WAITED_MS", std::to_string(waited.count()));
    if (c.needs_bytes)
        add_measurement(d.measurements, "NEEDS_BYTES", std::to_string(*c.needs_bytes));
    add_measurement(d.measurements, "WAITING_WORKERS", std::to_string(waiting.size()));
    add_host_context(d.measurements, in);
    // One at a time: the next waits for this one to settle, then the `for`.
    not_before_ = now + settle_;
    true_since_.reset();
    return d;
}

}  // namespace infervisor
