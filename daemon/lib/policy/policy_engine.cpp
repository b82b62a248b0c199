#include "policy/policy_engine.h"

#include <algorithm>
#include <cmath>

#include "policy/condition.h"
#include "policy/decision_details.h"
#include "policy/metrics.h"
#include "policy/rule_config.h"

namespace infervisor {

namespace {

// The rule's timer, restarted when the rule's definition changed.
template <class Timers>
RuleTimer& timer_for(Timers& timers, const RuleSpec& rule) {
    auto& timed = timers[rule.name];
    if (!(timed.spec == rule)) timed = {rule, RuleTimer{}};
    return timed.timer;
}

MemoryEvents events_since(const MemoryEvents& now, const MemoryEvents& base) {
    return MemoryEvents{now.low - base.low,           now.high - base.high,
                        now.max - base.max,           now.oom - base.oom,
                        now.oom_kill - base.oom_kill, now.oom_group_kill - base.oom_group_kill};
}

bool any_below(const MemoryEvents& now, const MemoryEvents& base) {
    return now.low < base.low || now.high < base.high || now.max < base.max || now.oom < base.oom ||
           now.oom_kill < base.oom_kill || now.oom_group_kill < base.oom_group_kill;
}

}  // namespace

PolicyEngine::PolicyEngine(PolicyOptions options) : options_(options) {
    host_.mem_available.set_window(options_.host_headroom_window);
}

void PolicyEngine::set_default_rules(std::vector<RuleSpec> rules) {
    defaults_ = merge_rules(rules, {});
    for (const auto& [worker, own] : own_rules_) effective_[worker] = merge_rules(rules, own);
}

void PolicyEngine::set_worker_rules(const std::string& worker, std::vector<RuleSpec> own) {
    effective_[worker] = merge_rules(defaults_, own);
    own_rules_[worker] = std::move(own);
}

void PolicyEngine::set_host_rules(std::vector<RuleSpec> rules) {
    host_rules_ = merge_rules(rules, {});
}

const std::vector<RuleSpec>& PolicyEngine::rules_for(const std::string& worker) const {
    auto it = effective_.find(worker);
    return it == effective_.end() ? defaults_ : it->second;
}

void PolicyEngine::set_headroom_window(Duration window) {
    options_.headroom_window = window;
    for (auto& [name, state] : workers_) state.recent.set_window(window);
}

void PolicyEngine::set_host_headroom_window(Duration window) {
    options_.host_headroom_window = window;
    host_.mem_available.set_window(window);
}

void PolicyEngine::set_victim_window(Duration window) {
    options_.victim_window = window;
    for (auto& [name, state] : workers_) {
        state.victim.set_window(window);
        state.gpu_victim.set_window(window);
    }
}

void PolicyEngine::set_growth_window(Duration window) {
    options_.growth_window = window;
    for (auto& [name, state] : workers_) {
        state.growth.set_window(window);
        state.gpu.set_window(window);
    }
}

PolicyEngine::WorkerState& PolicyEngine::state_of(const std::string& worker) {
    auto it = workers_.find(worker);
    if (it == workers_.end()) {
        WorkerState fresh{PhaseTracker(options_.phases),
                          GrowthTracker(options_.growth_window),
                          GrowthTracker(options_.headroom_window),
                          GrowthTracker(options_.victim_window),
                          GrowthTracker(options_.growth_window),
                          GrowthTracker(options_.victim_window),
                          CounterRate(options_.rate_interval),
                          CounterRate(options_.rate_interval),
                          CounterRate(options_.rate_interval),
                          std::nullopt,
                          std::nullopt,
                          {}};
        it = workers_.emplace(worker, std::move(fresh)).first;
    }
    return it->second;
}

void PolicyEngine::track(WorkerState& st, const WorkerSample& s) {
    // The load ramp never reaches the growth tracker (worker_phase.h).
    if (st.phase.observe(s) == WorkerPhase::serving) {
        if (s.memory_current) {
            st.growth.add(s.time, static_cast<double>(*s.memory_current));
            st.recent.add(s.time, static_cast<double>(*s.memory_current));
        }
        if (s.gpu_memory) st.gpu.add(s.time, static_cast<double>(*s.gpu_memory));
    }
    // Victim choice sees every phase: a worker still loading may be the cause.
    if (auto size = s.memory_anon ? s.memory_anon : s.memory_current)
        st.victim.add(s.time, static_cast<double>(*size));
    if (s.gpu_memory) st.gpu_victim.add(s.time, static_cast<double>(*s.gpu_memory));
    if (s.swapin_pages) st.swap_in.add(s.time, *s.swapin_pages);
    if (s.swapout_pages) st.swap_out.add(s.time, *s.swapout_pages);
    if (s.cpu_usage_usec) st.cpu.add(s.time, *s.cpu_usage_usec);
    st.engine_rates.add(s.engine);
    if (s.memory_events &&
        (!st.events_baseline || any_below(*s.memory_events, *st.events_baseline)))
        st.events_baseline = s.memory_events;
    st.last = s;
}

namespace {

// A checkpoint that would hold up the end of a run the memory cannot wait
// for: a kill instead, saying why (see PolicyEngine::evaluate).
void kill_if_no_time_to_checkpoint(Decision& d, std::optional<Duration> runs_out_in,
                                   std::optional<Duration> last_took, const std::string& what) {
    if (d.action != Action::checkpoint || d.then == Then::keep_running || !d.for_memory) return;
    std::string why = why_no_time_to_checkpoint(runs_out_in, last_took, what);
    if (why.empty()) return;
    d.action = Action::kill;
    d.reason += "; killed without its checkpoint: " + why;
    add_measurement(d.measurements, "CHECKPOINT_SKIPPED", why);
}

}  // namespace

std::vector<Decision> PolicyEngine::evaluate(const std::string& worker, const WorkerSample& sample,
                                             TimePoint now,
                                             std::optional<Duration> checkpoint_took) {
    WorkerState& st = state_of(worker);
    track(st, sample);
    const WorkerInputs in = inputs_of(st, sample, now);
    const auto growth = growth_percent(sample, in.growth_bytes_per_min);
    std::vector<Decision> out;
    for (const RuleSpec& rule : rules_for(worker)) {
        const Readings readings = read_condition(rule.when, in);
        RuleTimer& timer = timer_for(st.timers, rule);
        timer.observe(readings_hold(rule.when, readings), now);
        auto due = timer.due(timing_of(rule), now);
        if (!due) continue;
        timer.commit(due->step, now);
        Decision d = start_decision(worker, rule, RuleScope::worker, *due, readings, dry_run(rule));
        if (d.action == Action::throttle) d.memory_high = throttle_target(rule.throttle_to, sample);
        add_cause(d.measurements, rule, readings, due->held);
        add_worker_context(d.measurements, sample, growth, &rule, now);
        add_phase(d.measurements, st.phase, now);
        kill_if_no_time_to_checkpoint(d, memory_headroom(sample, in.recent_growth_bytes_per_min),
                                      checkpoint_took, "it runs out of memory.max");
        out.push_back(std::move(d));
    }
    return out;
}

WorkerInputs PolicyEngine::inputs_of(const WorkerState& st, const WorkerSample& sample,
                                     TimePoint now) {
    WorkerInputs in{sample,
                    now,
                    st.growth.per_minute(),
                    st.recent.per_minute(),
                    st.swap_in.per_second(),
                    st.swap_out.per_second(),
                    std::nullopt,
                    std::nullopt};
    if (auto usec_per_second = st.cpu.per_second()) in.cpu_usage_percent = *usec_per_second / 1e4;
    if (sample.memory_events && st.events_baseline)
        in.events_since_start = events_since(*sample.memory_events, *st.events_baseline);
    if (sample.engine) in.engine_values = &sample.engine->series;
    in.engine_rates = st.engine_rates.rates();
    in.gpu_growth_bytes_per_min = st.gpu.per_minute();
    return in;
}

VictimView PolicyEngine::view_of(const WorkerCandidate& c) const {
    VictimView view{c.name, c.priority, c.is_protected, std::nullopt, std::nullopt, std::nullopt};
    view.preempt = c.preempt;
    auto it = workers_.find(c.name);
    if (it != workers_.end() && it->second.last) {
        const WorkerSample& last = *it->second.last;
        view.memory_current = last.memory_current;
        view.memory_anon = last.memory_anon;
        view.memory_unevictable = last.memory_unevictable;
        view.growth_bytes_per_min = it->second.victim.per_minute();
        view.growth_percent_per_min = growth_percent(last, it->second.growth.per_minute());
    }
    return view;
}

std::optional<VictimView> PolicyEngine::gpu_view_of(const WorkerCandidate& c,
                                                    const std::string& device) const {
    auto it = workers_.find(c.name);
    if (it == workers_.end() || !it->second.last) return std::nullopt;
    for (const WorkerGpuDeviceUse& use : it->second.last->gpu_devices) {
        if (use.pci_bus_id != device || use.memory == 0) continue;
        VictimView view{c.name, c.priority, c.is_protected, use.memory, std::nullopt};
        view.preempt = c.preempt;
        // Its GPU memory over all its cards: a worker on two cards that grows
        // on the other one is seen growing here too (rare; the size decides
        // among the ones that hold still).
        view.growth_bytes_per_min = it->second.gpu_victim.per_minute();
        view.gpu_device = device;
        return view;
    }
    return std::nullopt;
}

std::optional<PolicyEngine::Chosen> PolicyEngine::choose_victim(
    const RuleSpec& rule, RuleStep step, const std::vector<WorkerCandidate>& candidates,
    const HostSample& host) const {
    std::vector<VictimView> views;
    bool on_gpu = !host.gpu_device.empty() && only_metrics(rule.when, "host.gpu.");
    for (const auto& c : candidates) {
        if (!on_gpu) {
            views.push_back(view_of(c));
        } else if (auto view = gpu_view_of(c, host.gpu_device)) {
            views.push_back(std::move(*view));
        }
    }
    auto pinned = host_.victims.find(rule.name);
    if (step == RuleStep::escalate && pinned != host_.victims.end()) {
        for (size_t i = 0; i < views.size(); ++i)
            if (views[i].name == pinned->second && !views[i].is_protected)
                return Chosen{views[i], "escalation: the victim of the step before; " +
                                            explain_victim(views, i)};
    }
    auto index = pick_victim(views);
    if (!index) return std::nullopt;
    return Chosen{views[*index], explain_victim(views, *index)};
}

std::vector<Decision> PolicyEngine::evaluate_host(const HostSample& sample,
                                                  const std::vector<WorkerCandidate>& candidates,
                                                  TimePoint now) {
    if (sample.pswpin) host_.swap_in.add(sample.time, *sample.pswpin);
    if (sample.pswpout) host_.swap_out.add(sample.time, *sample.pswpout);
    if (sample.mem_available)
        host_.mem_available.add(sample.time, static_cast<double>(*sample.mem_available));
    const HostInputs in{sample, host_.swap_in.per_second(), host_.swap_out.per_second(),
                        host_.mem_available.per_minute()};
    // What the conditions read: after a resume, no swap rate and no pressure.
    std::optional<HostSample> without_thrash;
    std::optional<HostInputs> discounted;
    if (now < host_.thrash_discounted_until) {
        without_thrash = sample;
        without_thrash->memory_pressure.reset();
        without_thrash->cpu_pressure.reset();
        without_thrash->io_pressure.reset();
        discounted.emplace(HostInputs{*without_thrash, std::nullopt, std::nullopt,
                                      in.mem_available_change_per_minute});
    }
    const HostInputs& read = discounted ? *discounted : in;
    std::vector<Decision> out;
    for (const RuleSpec& rule : host_rules_) {
        const Readings readings = read_condition(rule.when, read);
        RuleTimer& timer = timer_for(host_.timers, rule);
        // Checked per rule: a kill by an earlier rule in this pass counts.
        bool settling = now < host_.settled_at;
        // A rule that has not fired starts its clock only once the host has
        // settled; one that has keeps observing, so its escalation holds.
        timer.observe(readings_hold(rule.when, readings) && !(settling && !timer.latched()), now);
        auto due = timer.due(timing_of(rule), now);
        if (!due) continue;
        if (settling && due->step != RuleStep::escalate) continue;  // a repeat stays due
        auto victim = choose_victim(rule, due->step, candidates, in.sample);
        Action action = action_of(rule, due->step);
        if (!victim && action != Action::log) continue;  // stays due
        timer.commit(due->step, now);
        Decision d = start_decision(victim ? victim->view.name : "", rule, RuleScope::host, *due,
                                    readings, dry_run(rule));
        add_cause(d.measurements, rule, readings, due->held);
        add_host_context(d.measurements, in);
        if (victim) aim_at(d, *victim, rule, now);
        if (victim && d.action == Action::preempt) take_gentlest_step(d, victim->view, in);
        if (victim && !d.ladder)
            kill_if_no_time_to_checkpoint(
                d, host_mem_headroom(in.sample, in.mem_available_change_per_minute),
                victim->view.preempt.checkpoint_took, "the host runs out");
        if (victim &&
            (d.action == Action::kill || d.action == Action::checkpoint ||
             d.action == Action::suspend || d.action == Action::unload) &&
            options_.host_settle > Duration(0)) {
            host_.settled_at = now + options_.host_settle;
            add_measurement(d.measurements, "HOST_SETTLE_MS",
                            std::to_string(options_.host_settle.count()));
        }
        out.push_back(std::move(d));
    }
    return out;
}

void PolicyEngine::aim_at(Decision& d, const Chosen& chosen, const RuleSpec& rule, TimePoint now) {
    const VictimView& victim = chosen.view;
    host_.victims[rule.name] = victim.name;
    d.reason += "; victim '" + victim.name + "' (priority " + std::to_string(victim.priority) +
                "): " + chosen.reason;
    add_measurement(d.measurements, "VICTIM_PRIORITY", std::to_string(victim.priority));
    add_measurement(d.measurements, "VICTIM_REASON", chosen.reason);
    if (victim.growth_bytes_per_min)
        add_measurement(d.measurements, "VICTIM_GROWTH_BYTES_PER_SEC",
                        std::to_string(std::llround(*victim.growth_bytes_per_min / 60.0)));
    if (victim.memory_anon)
        add_measurement(d.measurements, "VICTIM_ANON_BYTES", std::to_string(*victim.memory_anon));
    auto it = workers_.find(victim.name);
    if (it == workers_.end() || !it->second.last) return;
    const WorkerSample& last = *it->second.last;
    if (d.action == Action::throttle) d.memory_high = throttle_target(rule.throttle_to, last);
    add_worker_context(d.measurements, last, victim.growth_percent_per_min, nullptr, now);
    add_phase(d.measurements, it->second.phase, now);
}

void PolicyEngine::take_gentlest_step(Decision& d, const VictimView& victim,
                                      const HostInputs& host) {
    PreemptContext context{
        victim_size(victim),
        victim.memory_unevictable,
        host.sample.swap_free,
        host_mem_headroom(host.sample, host.mem_available_change_per_minute),
        victim.growth_bytes_per_min && *victim.growth_bytes_per_min >= kRunawayGrowthBytesPerMin,
        !victim.gpu_device.empty()};
    PreemptChoice choice = choose_preempt_step(victim.preempt, context);
    d.action = choice.step.action;
    d.ladder = true;
    d.if_unload_fails = std::move(choice.if_unload_fails);
    d.reason += "; " + choice.step.why;
    add_measurement(d.measurements, "PREEMPT_STEP", choice.step.why);
}

void PolicyEngine::resumed(TimePoint now) {
    host_.thrash_discounted_until =
        std::max(host_.thrash_discounted_until, now + options_.host_settle);
}

void PolicyEngine::forget(const std::string& worker) { workers_.erase(worker); }

void PolicyEngine::remove_worker(const std::string& worker) {
    forget(worker);
    own_rules_.erase(worker);
    effective_.erase(worker);
}

std::optional<WorkerPhase> PolicyEngine::phase_of(const std::string& worker) const {
    auto it = workers_.find(worker);
    if (it == workers_.end() || !it->second.last) return std::nullopt;
    return it->second.phase.phase();
}

std::optional<uint64_t> PolicyEngine::serving_baseline(const std::string& worker) const {
    auto it = workers_.find(worker);
    if (it == workers_.end()) return std::nullopt;
    return it->second.phase.baseline();
}

std::optional<double> PolicyEngine::growth_percent_per_min(const std::string& worker) const {
    auto it = workers_.find(worker);
    if (it == workers_.end() || !it->second.last) return std::nullopt;
    return growth_percent(*it->second.last, it->second.growth.per_minute());
}

}  // namespace infervisor
