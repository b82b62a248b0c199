#include "supervise/worker_view_of.h"

#include "cgroup/cgroup_stats.h"
#include "probe/probe_spec.h"
#include "probe/probe_tracker.h"

namespace infervisor {

namespace {

ProbeStatus probe_view_of(const ProbeSnapshot& p) {
    ProbeStatus out;
    out.probe = std::string(probe_role_name(p.role));
    out.target = p.target;
    out.verdict = std::string(probe_verdict_name(p.verdict));
    out.active = p.active;
    out.consecutive_failures = p.consecutive_failures;
    out.failures = p.failures;
    if (p.last_failure) {
        out.last_failure = p.last_failure->detail;
        if (p.last_failure->http_status)
            out.last_failure_http_status = *p.last_failure->http_status;
    }
    if (p.last_failure_age) out.last_failure_age_usec = usec_of(*p.last_failure_age);
    return out;
}

}  // namespace

WorkerView view_of(const Worker& w, TimePoint now, ViewReads reads) {
    WorkerView v;
    v.name = w.name();
    v.state = std::string(w.shown_state());
    v.state_reason = w.state_reason();
    if (w.state_since() != TimePoint{}) v.state_age_usec = age_usec(w.state_since(), now);
    const pid_t pid = w.main_pid();
    if (pid) v.main_pid = pid;
    if (auto started = w.started_at()) v.uptime_usec = age_usec(*started, now);
    v.restarts = w.restarts();
    v.memory_high = w.spec().memory.high;
    v.memory_max = w.spec().memory.max;
    v.swap_max = w.spec().memory.swap_max;
    if (pid && reads == ViewReads::usage) {
        CgroupStats stats(w.cgroup());
        v.memory_current = value_or_empty(stats.memory_current());
        v.memory_peak = value_or_empty(stats.memory_peak());
        v.swap_current = value_or_empty(stats.swap_current());
        if (auto psi = stats.memory_pressure()) v.memory_pressure_some_avg10 = psi->some.avg10;
    }
    v.last_exit = w.last_exit();
    v.status_text = w.status_text();
    v.is_protected = w.spec().is_protected;
    for (const ProbeSnapshot& p : w.probes()) v.probes.push_back(probe_view_of(p));
    if (pid) v.phase = w.phase();
    if (pid) v.gpu_memory = w.gpu_memory();
    if (pid) v.gpu_utilization = w.gpu_utilization();
    if (pid) v.gpu_devices = w.gpu_cards();
    if (w.spec().gpu) v.gpu_memory_max = w.spec().gpu->memory_max;
    if (const auto& c = w.parked_checkpoint(); c && w.state() == WorkerState::parked)
        v.checkpoint = CheckpointStatus{c->path, c->bytes, age_usec(c->written_at, now)};
    return v;
}

}  // namespace infervisor
