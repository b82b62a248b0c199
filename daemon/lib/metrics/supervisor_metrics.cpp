#include "metrics/supervisor_metrics.h"

#include <unistd.h>

#include <array>

#include "metrics/exposition.h"

namespace infervisor {

namespace {

double page_size() {
    static const double size = static_cast<double>(::sysconf(_SC_PAGESIZE));
    return size;
}

double seconds(std::chrono::microseconds d) { return std::chrono::duration<double>(d).count(); }

// A gauge over the last sample of every running worker that has the value.
// With `only_if_any`, the family is left out when no worker has the value
// (the GPU series, on a host whose GPUs are not read).
template <typename Get>
void worker_gauge(Exposition& out, const std::map<std::string, const SampledWorker*>& live,
                  std::string_view name, MetricType type, std::string_view help, Get get,
                  bool only_if_any = false) {
    if (only_if_any) {
        bool any = false;
        for (const auto& [worker, w] : live) any = any || get(*w).has_value();
        if (!any) return;
    }
    out.family(name, type, help);
    for (const auto& [worker, w] : live)
        if (std::optional<double> v = get(*w)) out.sample({{"worker", worker}}, *v);
}

// A gauge over the GPUs of the last round that have the value, by their PCI
// address (label device); left out when none has it.
template <typename Get>
void gpu_gauge(Exposition& out, const std::vector<GpuDevice>& gpus, std::string_view name,
               std::string_view help, Get get) {
    bool any = false;
    for (const GpuDevice& d : gpus) any = any || get(d).has_value();
    if (!any) return;
    out.family(name, MetricType::gauge, help);
    for (const GpuDevice& d : gpus)
        if (std::optional<double> v = get(d)) out.sample({{"device", d.pci_bus_id}}, *v);
}

std::optional<double> opt(const std::optional<uint64_t>& v) {
    if (!v) return std::nullopt;
    return static_cast<double>(*v);
}

struct PsiSource {
    std::string_view resource;
    std::optional<PsiReading> WorkerSample::*worker;
    std::optional<PsiReading> HostSample::*host;
};
constexpr std::array<PsiSource, 3> kPsi = {{
    {"memory", &WorkerSample::memory_pressure, &HostSample::memory_pressure},
    {"cpu", &WorkerSample::cpu_pressure, &HostSample::cpu_pressure},
    {"io", &WorkerSample::io_pressure, &HostSample::io_pressure},
}};

// Both PSI families for one reading; a worker's with its worker label first,
// the host's (no worker) without.
void psi_samples(Exposition& out, bool totals, std::optional<std::string_view> worker,
                 std::string_view resource, const PsiReading& r) {
    auto put = [&](std::string_view kind, const PsiAverages& a) {
        std::array<Label, 3> labels = {
            {{"worker", worker.value_or("")}, {"resource", resource}, {"kind", kind}}};
        std::span<const Label> l(labels);
        out.sample(worker ? l : l.subspan(1),
                   totals ? static_cast<double>(a.total_us) / 1e6 : a.avg10 / 100);
    };
    put("some", r.some);
    if (r.full) put("full", *r.full);
}

}  // namespace

SupervisorMetrics::PerWorker& SupervisorMetrics::worker(const std::string& name) {
    auto it = workers_.find(name);
    if (it == workers_.end()) it = workers_.emplace(name, PerWorker{}).first;
    return it->second;
}

void SupervisorMetrics::set_workers(std::vector<WorkerView> workers) {
    views_ = std::move(workers);
    for (auto it = workers_.begin(); it != workers_.end();) {
        bool configured = false;
        for (const auto& v : views_) configured = configured || v.name == it->first;
        it = configured ? std::next(it) : workers_.erase(it);
    }
    for (const auto& v : views_) worker(v.name);
}

void SupervisorMetrics::record_round(const EvaluationRound& round) {
    ++rounds_;
    last_evaluation_ = round.evaluation_time;
    last_lateness_ = round.tick_lateness;
    total_lateness_ += round.tick_lateness;
    host_ = round.host;
    gpus_ = round.gpus;
    gpu_xids_ = round.gpu_xids;
    for (auto& [name, w] : workers_) w.last.reset();
    for (const SampledWorker& s : round.workers) {
        worker(s.name).last = s;
    }
}

void SupervisorMetrics::record_action(const std::string& worker_name, const std::string& rule,
                                      const std::string& action) {
    if (worker_name.empty()) {
        ++host_actions_[{rule, action}];
        return;
    }
    // A worker not listed yet is added; set_workers() drops it if it is not configured.
    PerWorker& w = worker(worker_name);
    ++w.actions[{rule, action}];
}

void SupervisorMetrics::record_oom_kill(const std::string& name) {
    if (!name.empty()) ++worker(name).oom_kills;
}

void SupervisorMetrics::record_checkpoint(const std::string& name, bool written,
                                          std::optional<double> seconds,
                                          std::optional<uint64_t> bytes, int64_t realtime_ms) {
    if (name.empty()) return;
    auto& c = worker(name).checkpoints;
    if (!c) c.emplace();
    if (!written) {
        ++c->failed;
        return;
    }
    ++c->written;
    if (seconds) {
        ++c->timed;
        c->seconds += *seconds;
    }
    c->last_bytes = bytes;
    c->last_time_seconds = static_cast<double>(realtime_ms) / 1000;
}

void SupervisorMetrics::record_restore(const std::string& name, bool restored,
                                       std::optional<double> seconds) {
    if (name.empty()) return;
    auto& c = worker(name).checkpoints;
    if (!c) c.emplace();
    if (!restored) {
        ++c->restore_failed;
        return;
    }
    ++c->restored;
    if (seconds) {
        ++c->restores_timed;
        c->restore_seconds += *seconds;
    }
}

void SupervisorMetrics::record_suspension(const std::string& name,
                                          std::optional<uint64_t> reclaimed_bytes) {
    if (name.empty()) return;
    auto& s = worker(name).suspensions;
    if (!s) s.emplace();
    ++s->suspended;
    s->reclaimed_bytes += reclaimed_bytes.value_or(0);
}

void SupervisorMetrics::record_resume(const std::string& name,
                                      std::optional<double> suspended_seconds) {
    if (name.empty()) return;
    auto& s = worker(name).suspensions;
    if (!s) s.emplace();
    ++s->resumed;
    s->suspended_seconds += suspended_seconds.value_or(0);
}

void SupervisorMetrics::record_admission_wait(const std::string& name) {
    if (name.empty()) return;
    auto& a = worker(name).admissions;
    if (!a) a.emplace();
    ++a->waits;
}

void SupervisorMetrics::record_admission(const std::string& name, bool overcommit,
                                         std::optional<double> waited_seconds) {
    if (name.empty()) return;
    auto& a = worker(name).admissions;
    if (!a) a.emplace();
    ++(overcommit ? a->overcommit : a->fit);
    if (waited_seconds) {
        ++a->timed;
        a->waited_seconds += *waited_seconds;
    }
}

void SupervisorMetrics::set_extras(const std::string& name, std::optional<uint64_t> memory_peak,
                                   std::optional<uint64_t> pids_current) {
    auto it = workers_.find(name);
    if (it == workers_.end() || !it->second.last) return;
    it->second.last->sample.memory_peak = memory_peak;
    it->second.last->sample.pids_current = pids_current;
}

std::string SupervisorMetrics::render(const DaemonStats& daemon) const {
    Exposition out(last_size_ + last_size_ / 8);
    render_workers(out);
    render_facts(out);
    render_checkpoints(out);
    render_suspensions(out);
    render_admissions(out);
    render_host(out);
    render_gpus(out);
    render_gpu_xids(out);
    render_daemon(out, daemon);
    last_size_ = out.text().size();
    return out.take();
}

void SupervisorMetrics::render_workers(Exposition& out) const {
    std::map<std::string, const SampledWorker*> live;
    for (const auto& [name, w] : workers_)
        if (w.last) live.emplace(name, &*w.last);
    using S = const SampledWorker&;
    const auto gauge = MetricType::gauge;
    worker_gauge(out, live, "infervisor_worker_memory_bytes", gauge,
                 "Memory used by the worker's cgroup (memory.current).",
                 [](S w) { return opt(w.sample.memory_current); });
    worker_gauge(out, live, "infervisor_worker_memory_max_bytes", gauge,
                 "The worker's memory.max; absent when there is no limit.",
                 [](S w) { return opt(w.sample.memory_max); });
    worker_gauge(out, live, "infervisor_worker_memory_high_bytes", gauge,
                 "The worker's memory.high (throttling threshold); absent when there is none.",
                 [](S w) { return opt(w.sample.memory_high); });
    worker_gauge(out, live, "infervisor_worker_memory_peak_bytes", gauge,
                 "Highest memory use of the worker's current run (memory.peak).",
                 [](S w) { return opt(w.sample.memory_peak); });
    worker_gauge(out, live, "infervisor_worker_swap_bytes", gauge,
                 "Swap used by the worker's cgroup (memory.swap.current).",
                 [](S w) { return opt(w.sample.swap_current); });
    worker_gauge(out, live, "infervisor_worker_memory_growth_per_minute_ratio", gauge,
                 "Memory growth per minute as a fraction of memory.max (of memory.current "
                 "without a limit), as the policy's memory.growth measures it (0.15 = 15 %/min).",
                 [](S w) -> std::optional<double> {
                     if (!w.growth_percent_per_min) return std::nullopt;
                     return *w.growth_percent_per_min / 100;
                 });
    for (bool totals : {false, true}) {
        if (totals)
            out.family("infervisor_worker_pressure_stalled_seconds_total", MetricType::counter,
                       "Time some (or all, kind=full) of the worker's tasks stalled on the "
                       "resource (PSI total).");
        else
            out.family("infervisor_worker_pressure_avg10_ratio", gauge,
                       "Fraction of the last 10 s some (or all, kind=full) of the worker's tasks "
                       "stalled on the resource (PSI avg10).");
        for (const auto& [name, w] : live)
            for (const PsiSource& src : kPsi)
                if (const auto& r = w->sample.*src.worker)
                    psi_samples(out, totals, name, src.resource, *r);
    }
    out.family("infervisor_worker_memory_events_total", MetricType::counter,
               "memory.events counters of the worker's cgroup: high (throttled), max (at "
               "memory.max), oom, oom_kill.");
    for (const auto& [name, w] : live)
        if (const auto& e = w->sample.memory_events)
            for (auto [event, count] : {std::pair<std::string_view, uint64_t>{"high", e->high},
                                        {"max", e->max},
                                        {"oom", e->oom},
                                        {"oom_kill", e->oom_kill}})
                out.sample({{"worker", name}, {"event", event}}, static_cast<double>(count));
    worker_gauge(out, live, "infervisor_worker_swapped_in_bytes_total", MetricType::counter,
                 "Memory the worker's cgroup read back from swap (pswpin, or anonymous refaults "
                 "on kernels without it, times the page size).",
                 [](S w) -> std::optional<double> {
                     if (!w.sample.swapin_pages) return std::nullopt;
                     return static_cast<double>(*w.sample.swapin_pages) * page_size();
                 });
    worker_gauge(out, live, "infervisor_worker_swapped_out_bytes_total", MetricType::counter,
                 "Memory the worker's cgroup wrote to swap (pswpout times the page size).",
                 [](S w) -> std::optional<double> {
                     if (!w.sample.swapout_pages) return std::nullopt;
                     return static_cast<double>(*w.sample.swapout_pages) * page_size();
                 });
    worker_gauge(out, live, "infervisor_worker_cpu_seconds_total", MetricType::counter,
                 "CPU time used by the worker's cgroup (cpu.stat usage_usec).",
                 [](S w) -> std::optional<double> {
                     if (!w.sample.cpu_usage_usec) return std::nullopt;
                     return static_cast<double>(*w.sample.cpu_usage_usec) / 1e6;
                 });
    worker_gauge(out, live, "infervisor_worker_pids", gauge,
                 "Tasks in the worker's cgroup (pids.current).",
                 [](S w) { return opt(w.sample.pids_current); });
    worker_gauge(out, live, "infervisor_worker_workdir_bytes", gauge,
                 "Disk usage of the worker's work dir at the last scan.",
                 [](S w) { return opt(w.sample.workdir_usage); });
    worker_gauge(out, live, "infervisor_worker_workdir_quota_bytes", gauge,
                 "The worker's workdir_quota; absent when there is none.",
                 [](S w) { return opt(w.sample.workdir_quota); });
    // Only where the host's GPUs are read (and the reading is fresh): none
    // of these families on a host without GPUs.
    worker_gauge(
        out, live, "infervisor_worker_gpu_memory_bytes", gauge,
        "GPU memory held by the worker's processes, summed over the devices (0 when it holds "
        "none on a host whose GPUs are read).",
        [](S w) { return opt(w.sample.gpu_memory); }, true);
    worker_gauge(
        out, live, "infervisor_worker_gpu_memory_max_bytes", gauge,
        "The worker's gpu.memory_max; absent when there is none or the GPUs are not read.",
        [](S w) { return w.sample.gpu_memory ? opt(w.sample.gpu_memory_max) : std::nullopt; },
        true);
    worker_gauge(
        out, live, "infervisor_worker_gpu_utilization_ratio", gauge,
        "GPU compute used by the worker's processes as a fraction of one device, summed over "
        "the devices (2 = two busy GPUs).",
        [](S w) -> std::optional<double> {
            if (!w.sample.gpu_utilization) return std::nullopt;
            return *w.sample.gpu_utilization / 100;
        },
        true);
    bool per_device = false;
    for (const auto& [name, w] : live) per_device = per_device || !w->sample.gpu_devices.empty();
    if (!per_device) return;
    out.family("infervisor_worker_gpu_device_memory_bytes", gauge,
               "GPU memory held by the worker's processes on the device (its PCI address); "
               "only the devices it holds memory on.");
    for (const auto& [name, w] : live) {
        const WorkerSample& sample = w->sample;
        for (const WorkerGpuDeviceUse& use : sample.gpu_devices)
            out.sample({{"worker", name}, {"device", use.pci_bus_id}},
                       static_cast<double>(use.memory));
    }
}

void SupervisorMetrics::render_facts(Exposition& out) const {
    out.family("infervisor_worker_restarts_total", MetricType::counter,
               "Restarts of the worker since the daemon started.");
    for (const auto& v : views_) out.sample({{"worker", v.name}}, static_cast<double>(v.restarts));
    out.family("infervisor_worker_oom_kills_total", MetricType::counter,
               "Runs of the worker ended by an OOM kill since the daemon started.");
    for (const auto& v : views_)
        if (auto it = workers_.find(v.name); it != workers_.end())
            out.sample({{"worker", v.name}}, static_cast<double>(it->second.oom_kills));
    out.family("infervisor_worker_state", MetricType::gauge,
               "1 for the worker's current state, 0 for the others.");
    for (const auto& v : views_)
        for (std::string_view state : kShownStates)
            out.sample({{"worker", v.name}, {"state", state}}, state == v.state ? 1 : 0);
    out.family("infervisor_worker_last_exit_info", MetricType::gauge,
               "Always 1; the label reason says how the worker's last run ended.");
    for (const auto& v : views_)
        if (!v.last_exit.empty()) out.sample({{"worker", v.name}, {"reason", v.last_exit}}, 1);
    out.family("infervisor_policy_actions_total", MetricType::counter,
               "Policy actions decided, by rule and action (dry-run ones included); "
               "worker=\"\" for a host rule's step that found no victim.");
    for (const auto& v : views_)
        if (auto it = workers_.find(v.name); it != workers_.end())
            for (const auto& [key, count] : it->second.actions)
                out.sample({{"worker", v.name}, {"rule", key.first}, {"action", key.second}},
                           static_cast<double>(count));
    for (const auto& [key, count] : host_actions_)
        out.sample({{"worker", ""}, {"rule", key.first}, {"action", key.second}},
                   static_cast<double>(count));
}

void SupervisorMetrics::render_checkpoints(Exposition& out) const {
    std::vector<std::pair<std::string_view, const CheckpointCounts*>> with;
    for (const auto& v : views_)
        if (auto it = workers_.find(v.name); it != workers_.end() && it->second.checkpoints)
            with.emplace_back(v.name, &*it->second.checkpoints);
    if (with.empty()) return;
    auto count = [](uint64_t n) { return static_cast<double>(n); };
    out.family("infervisor_worker_checkpoints_total", MetricType::counter,
               "Checkpoints of the worker since the daemon started: written (published) or "
               "failed (no CHECKPOINT=1 in time, nothing usable written, criu failed).");
    for (const auto& [name, c] : with) {
        out.sample({{"worker", name}, {"result", "written"}}, count(c->written));
        out.sample({{"worker", name}, {"result", "failed"}}, count(c->failed));
    }
    out.family("infervisor_worker_checkpoint_duration_seconds", MetricType::summary,
               "Time from a checkpoint's request to its publication, of the requested "
               "checkpoints that were written.");
    for (const auto& [name, c] : with) out.summary({{"worker", name}}, c->seconds, c->timed);
    out.family("infervisor_worker_last_checkpoint_bytes", MetricType::gauge,
               "Size of the worker's last checkpoint written.");
    for (const auto& [name, c] : with)
        if (c->last_bytes) out.sample({{"worker", name}}, count(*c->last_bytes));
    out.family("infervisor_worker_last_checkpoint_timestamp_seconds", MetricType::gauge,
               "When the worker's last checkpoint was written, in seconds since the epoch.");
    for (const auto& [name, c] : with)
        if (c->last_time_seconds) out.sample({{"worker", name}}, *c->last_time_seconds);
    out.family("infervisor_worker_checkpoint_restores_total", MetricType::counter,
               "Runs started from a checkpoint: restored (ready, or llama-server's slots "
               "restored) or failed (criu could not restore it and the command started afresh, "
               "or llama-server's slots were not restored).");
    for (const auto& [name, c] : with) {
        out.sample({{"worker", name}, {"result", "restored"}}, count(c->restored));
        out.sample({{"worker", name}, {"result", "failed"}}, count(c->restore_failed));
    }
    out.family("infervisor_worker_checkpoint_restore_duration_seconds", MetricType::summary,
               "Time from the start of a run restored from a checkpoint until it was ready.");
    for (const auto& [name, c] : with)
        out.summary({{"worker", name}}, c->restore_seconds, c->restores_timed);
}

void SupervisorMetrics::render_suspensions(Exposition& out) const {
    std::vector<std::pair<std::string_view, const SuspensionCounts*>> with;
    for (const auto& v : views_)
        if (auto it = workers_.find(v.name); it != workers_.end() && it->second.suspensions)
            with.emplace_back(v.name, &*it->second.suspensions);
    if (with.empty()) return;
    out.family("infervisor_worker_suspensions_total", MetricType::counter,
               "Times the worker was suspended (frozen, its memory pushed out) since the daemon "
               "started.");
    for (const auto& [name, s] : with)
        out.sample({{"worker", name}}, static_cast<double>(s->suspended));
    out.family("infervisor_worker_resumes_total", MetricType::counter,
               "Times the worker was resumed (thawed) since the daemon started.");
    for (const auto& [name, s] : with)
        out.sample({{"worker", name}}, static_cast<double>(s->resumed));
    out.family("infervisor_worker_suspended_seconds_total", MetricType::counter,
               "Time the worker spent suspended, added when it is resumed.");
    for (const auto& [name, s] : with) out.sample({{"worker", name}}, s->suspended_seconds);
    out.family("infervisor_worker_suspend_reclaimed_bytes_total", MetricType::counter,
               "Memory pushed out of the worker's cgroup when it was suspended (its "
               "memory.current before the reclaim less after it).");
    for (const auto& [name, s] : with)
        out.sample({{"worker", name}}, static_cast<double>(s->reclaimed_bytes));
}

void SupervisorMetrics::render_admissions(Exposition& out) const {
    std::vector<std::pair<std::string_view, const AdmissionCounts*>> with;
    for (const auto& v : views_)
        if (auto it = workers_.find(v.name); it != workers_.end() && it->second.admissions)
            with.emplace_back(v.name, &*it->second.admissions);
    if (with.empty()) return;
    auto count = [](uint64_t v) { return static_cast<double>(v); };
    out.family("infervisor_worker_admission_waits_total", MetricType::counter,
               "Times the worker waited instead of starting because its memory.reserve did not "
               "fit on the host.");
    for (const auto& [name, a] : with) out.sample({{"worker", name}}, count(a->waits));
    out.family("infervisor_worker_admissions_total", MetricType::counter,
               "Starts admitted after a wait (how=\"fit\") or without room because of "
               "admission: overcommit (how=\"overcommit\").");
    for (const auto& [name, a] : with) {
        out.sample({{"worker", name}, {"how", "fit"}}, count(a->fit));
        out.sample({{"worker", name}, {"how", "overcommit"}}, count(a->overcommit));
    }
    out.family("infervisor_worker_admission_wait_seconds", MetricType::summary,
               "Time the worker waited for room before it was admitted, of the waits that "
               "ended in an admission.");
    for (const auto& [name, a] : with) out.summary({{"worker", name}}, a->waited_seconds, a->timed);
}

void SupervisorMetrics::render_host(Exposition& out) const {
    if (!host_) return;
    const HostSample& h = *host_;
    for (bool totals : {false, true}) {
        if (totals)
            out.family("infervisor_host_pressure_stalled_seconds_total", MetricType::counter,
                       "Host-wide PSI total stall time (/proc/pressure).");
        else
            out.family("infervisor_host_pressure_avg10_ratio", MetricType::gauge,
                       "Host-wide PSI avg10 as a fraction (/proc/pressure).");
        for (const PsiSource& src : kPsi)
            if (const auto& r = h.*src.host)
                psi_samples(out, totals, std::nullopt, src.resource, *r);
    }
    out.family("infervisor_host_swapped_in_bytes_total", MetricType::counter,
               "Memory read back from swap on the host (/proc/vmstat pswpin times the page size).");
    if (h.pswpin) out.sample(static_cast<double>(*h.pswpin) * page_size());
    out.family("infervisor_host_swapped_out_bytes_total", MetricType::counter,
               "Memory written to swap on the host (/proc/vmstat pswpout times the page size).");
    if (h.pswpout) out.sample(static_cast<double>(*h.pswpout) * page_size());
    out.family("infervisor_host_memory_available_bytes", MetricType::gauge,
               "MemAvailable of /proc/meminfo.");
    if (h.mem_available) out.sample(static_cast<double>(*h.mem_available));
    out.family("infervisor_host_memory_total_bytes", MetricType::gauge,
               "MemTotal of /proc/meminfo.");
    if (h.mem_total) out.sample(static_cast<double>(*h.mem_total));
}

void SupervisorMetrics::render_gpus(Exposition& out) const {
    if (gpus_.empty()) return;
    out.family("infervisor_gpu_info", MetricType::gauge,
               "Always 1; the labels index, vendor, name and uuid (NVIDIA, AMD) describe the "
               "GPU at the PCI address device.");
    for (const GpuDevice& d : gpus_) {
        std::string index = std::to_string(d.index);
        out.sample({{"device", d.pci_bus_id},
                    {"index", index},
                    {"vendor", d.vendor},
                    {"name", d.name},
                    {"uuid", d.uuid}},
                   1);
    }
    gpu_gauge(out, gpus_, "infervisor_gpu_memory_total_bytes", "Memory of the GPU.",
              [](const GpuDevice& d) { return opt(d.memory_total); });
    gpu_gauge(out, gpus_, "infervisor_gpu_memory_used_bytes",
              "GPU memory in use, by every process on the device.",
              [](const GpuDevice& d) { return opt(d.memory_used); });
    gpu_gauge(out, gpus_, "infervisor_gpu_utilization_ratio",
              "Fraction of the driver's last sample period the GPU was busy.",
              [](const GpuDevice& d) -> std::optional<double> {
                  if (!d.utilization) return std::nullopt;
                  return *d.utilization / 100;
              });
    out.family("infervisor_gpu_fault", MetricType::gauge,
               "1 when the GPU cannot be used (lost, or its driver fails to answer), else 0.");
    for (const GpuDevice& d : gpus_)
        out.sample({{"device", d.pci_bus_id}}, d.fault.empty() ? 0 : 1);
}

void SupervisorMetrics::render_gpu_xids(Exposition& out) const {
    if (gpu_xids_.empty()) return;
    out.family("infervisor_gpu_xid_errors_total", MetricType::counter,
               "Xid errors NVIDIA's driver reported on the GPU since the daemon started, by code.");
    for (const auto& [key, n] : gpu_xids_)
        out.sample({{"device", key.first}, {"xid", std::to_string(key.second)}},
                   static_cast<double>(n));
}

void SupervisorMetrics::render_daemon(Exposition& out, const DaemonStats& daemon) const {
    out.family("infervisor_daemon_cpu_seconds_total", MetricType::counter,
               "CPU time (user and system) used by infervisord.");
    out.sample(daemon.cpu_seconds);
    out.family("infervisor_daemon_resident_memory_bytes", MetricType::gauge,
               "Resident memory of infervisord.");
    if (daemon.resident_bytes) out.sample(static_cast<double>(*daemon.resident_bytes));
    out.family("infervisor_daemon_start_time_seconds", MetricType::gauge,
               "When infervisord started, in seconds since the epoch.");
    out.sample(daemon.start_time_seconds);
    out.family("infervisor_daemon_loop_lag_seconds", MetricType::gauge,
               "How late the last sampling tick fired: time the event loop was busy elsewhere.");
    out.sample(seconds(last_lateness_));
    out.family("infervisor_daemon_loop_lag_seconds_total", MetricType::counter,
               "Sum of the sampling ticks' lateness.");
    out.sample(seconds(total_lateness_));
    out.family("infervisor_daemon_evaluation_seconds", MetricType::gauge,
               "Duration of the last policy evaluation round (sampling, rules, actions).");
    out.sample(seconds(last_evaluation_));
    out.family("infervisor_daemon_evaluations_total", MetricType::counter,
               "Policy evaluation rounds (sampling ticks and kernel wake-ups).");
    out.sample(static_cast<double>(rounds_));
}

}  // namespace infervisor
