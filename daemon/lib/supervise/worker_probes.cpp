#include "supervise/worker_probes.h"

#include <spdlog/spdlog.h>

#include "base/units.h"
#include "probe/exec_probe.h"
#include "probe/socket_probe.h"

namespace infervisor {

namespace {

constexpr ProbeRole kRoles[] = {ProbeRole::startup, ProbeRole::readiness, ProbeRole::liveness};

// The worker's environment minus what only the worker itself may use.
std::vector<std::string> probe_environment(const std::vector<std::string>& worker_env) {
    std::vector<std::string> out;
    for (const auto& entry : worker_env)
        if (entry.rfind("NOTIFY_SOCKET=", 0) != 0 && entry.rfind("WATCHDOG_USEC=", 0) != 0)
            out.push_back(entry);
    return out;
}

std::string verdict_sentence(ProbeRole role, const ProbeChange& change) {
    std::string role_name(probe_role_name(role));
    if (change.to == ProbeVerdict::passing)
        return role_name + " probe passing (" + change.outcome.detail + ", " +
               format_duration(change.outcome.latency) + ")";
    return role_name + " probe failing: " + change.outcome.detail + " (" +
           std::to_string(change.streak) + " in a row)";
}

}  // namespace

std::vector<std::pair<std::string, std::string>> probe_fields(ProbeRole role, const ProbeSpec& spec,
                                                              const ProbeOutcome& outcome) {
    std::vector<std::pair<std::string, std::string>> fields = {
        {"PROBE", std::string(probe_role_name(role))},
        {"PROBE_KIND", std::string(probe_kind_name(spec.kind))},
        {"PROBE_TARGET", describe_probe(spec)},
        {"PROBE_DETAIL", outcome.detail},
        {"PROBE_LATENCY_MS", std::to_string(outcome.latency.count())}};
    if (outcome.http_status)
        fields.emplace_back("PROBE_HTTP_STATUS", std::to_string(*outcome.http_status));
    return fields;
}

WorkerProbes::WorkerProbes(WorkerContext& ctx, std::string worker, const ProbesSpec& spec,
                           OnChange on_change)
    : ctx_(ctx), worker_(std::move(worker)), spec_(spec), on_change_(std::move(on_change)) {
    for (ProbeRole role : kRoles) {
        const auto& probe = spec_.of(role);
        if (!probe) continue;
        auto starter = [this, role, probe = *probe](Duration timeout, ProbeDone done) {
            return start_attempt(role, probe, timeout, std::move(done));
        };
        auto report = [this, role](const ProbeChange& c) { changed(role, c); };
        slots_.push_back(
            {role, std::make_unique<ProbeRunner>(ctx_.clock, *probe, starter, report)});
    }
}

WorkerProbes::~WorkerProbes() { run_ended(); }

WorkerProbes::Slot* WorkerProbes::slot(ProbeRole role) {
    for (auto& s : slots_)
        if (s.role == role) return &s;
    return nullptr;
}

void WorkerProbes::run_started(const SpawnRequest& launched) {
    run_ended();
    launched_ = launched;
    if (auto gate = spec_.gate())
        if (Slot* s = slot(*gate)) s->runner->start();
}

void WorkerProbes::loading_over() {
    if (Slot* s = slot(ProbeRole::startup)) s->runner->stop();
    for (ProbeRole role : {ProbeRole::readiness, ProbeRole::liveness})
        if (Slot* s = slot(role); s && !s->runner->running()) s->runner->start();
}

void WorkerProbes::run_ended() {
    for (auto& s : slots_) s.runner->stop();
}

// An exec probe runs as the worker was launched (its credentials,
// hardening and oom_score_adj; never the daemon's), inside the worker's
// cgroup: see exec_probe.h.
std::shared_ptr<ProbeAttempt> WorkerProbes::start_attempt(ProbeRole role, const ProbeSpec& spec,
                                                          Duration timeout, ProbeDone done) {
    if (spec.kind != ProbeKind::exec)
        return start_socket_probe(ctx_.io, spec, timeout, std::move(done));
    ExecProbeSetup setup{launched_,
                         ctx_.cgroups.worker_probe(worker_, std::string(probe_role_name(role)))};
    setup.request.argv = spec.command;
    setup.request.environment = probe_environment(launched_.environment);
    return start_exec_probe(ctx_.io, std::move(setup), timeout, std::move(done));
}

void WorkerProbes::changed(ProbeRole role, const ProbeChange& change) {
    const ProbeSpec& spec = *spec_.of(role);
    auto fields = probe_fields(role, spec, change.outcome);
    fields.emplace_back("PROBE_VERDICT", std::string(probe_verdict_name(change.to)));
    fields.emplace_back("PROBE_PREVIOUS", std::string(probe_verdict_name(change.from)));
    fields.emplace_back("PROBE_STREAK", std::to_string(change.streak));
    ctx_.events.emit(
        Event{EventKind::probe_changed, worker_, verdict_sentence(role, change), fields});
    if (on_change_) on_change_(role, change);
}

std::vector<ProbeSnapshot> WorkerProbes::snapshot() const {
    std::vector<ProbeSnapshot> out;
    const TimePoint now = ctx_.clock.now();
    for (const auto& s : slots_) {
        const ProbeTracker& t = s.runner->tracker();
        ProbeSnapshot p;
        p.role = s.role;
        p.target = describe_probe(t.spec());
        p.active = s.runner->running();
        p.verdict = t.verdict();
        p.consecutive_failures = t.consecutive_failures();
        p.attempts = t.attempts();
        p.failures = t.failures();
        p.last_failure = t.last_failure();
        if (auto at = t.last_failure_at())
            p.last_failure_age = std::chrono::duration_cast<Duration>(now - *at);
        out.push_back(std::move(p));
    }
    return out;
}

}  // namespace infervisor
