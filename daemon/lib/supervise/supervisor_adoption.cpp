// Supervisor::adopt_leftovers: carrying out adoption.h's plan for each
// worker an earlier daemon left behind.
#include <spdlog/spdlog.h>

#include <set>

#include "notify/notify_socket.h"
#include "process/pidfd.h"
#include "process/proc_stat.h"
#include "supervise/adoption.h"
#include "supervise/supervisor.h"

namespace infervisor {

namespace {

// The persisted main process, if it is still the same process (pid, start
// time) and in the worker's cgroup. The pidfd is opened first, so the checks
// concern the process it names, not a successor that got its pid.
UniqueFd open_main_process(const PersistedWorker& p, const Paths& paths,
                           const std::string& cgroup_in_proc) {
    if (p.pid <= 0 || p.pid_start_time == 0) return {};
    auto pidfd = open_pidfd(p.pid);
    if (!pidfd) return {};
    auto stat = read_proc_stat(paths.procfs, p.pid);
    // A zombie has ended: its run is wound up, not adopted.
    if (!stat || stat->start_time != p.pid_start_time || stat->state == 'Z') return {};
    if (!process_in_cgroup(paths.procfs, p.pid, cgroup_in_proc)) return {};
    return std::move(*pidfd);
}

// The main process of a run whose state file cannot be read (adoption.h):
// in a populated cgroup, the process whose parent lives outside it (the
// worker's first process, reparented when its daemon ended), the oldest if
// several; not a zombie. Its pidfd is opened before the checks, as above.
struct FoundMain {
    pid_t pid = 0;
    uint64_t start_time = 0;
    UniqueFd pidfd;
};

std::optional<FoundMain> find_main_in_cgroup(const CgroupDir& dir, const Paths& paths,
                                             const std::string& cgroup_in_proc) {
    auto procs = dir.procs();
    if (!procs) return std::nullopt;
    std::set<pid_t> inside(procs->begin(), procs->end());
    std::optional<FoundMain> best;
    for (pid_t pid : *procs) {
        auto stat = read_proc_stat(paths.procfs, pid);
        if (!stat || stat->state == 'Z' || inside.count(stat->ppid)) continue;
        if (best && best->start_time <= stat->start_time) continue;
        auto pidfd = open_pidfd(pid);
        if (!pidfd) continue;
        auto again = read_proc_stat(paths.procfs, pid);  // still the process the pidfd names
        if (!again || again->start_time != stat->start_time) continue;
        if (!process_in_cgroup(paths.procfs, pid, cgroup_in_proc)) continue;
        best = FoundMain{pid, stat->start_time, std::move(*pidfd)};
    }
    return best;
}

// What a run found in its cgroup looks like to Worker::adopt: running (or
// suspended, frozen as it is), its counters afresh, no snapshot.
PersistedWorker found_in_cgroup(const std::string& name, const FoundMain& main, bool frozen) {
    PersistedWorker p;
    p.name = name;
    p.pid = main.pid;
    p.pid_start_time = main.start_time;
    p.state = frozen ? WorkerState::suspended : WorkerState::running;
    if (frozen) p.suspended_by = "an earlier daemon (its state file could not be read)";
    return p;
}

// For the log line: what the configuration means for the worker.
std::string config_verdict(const AdoptionPlan& plan, bool configured,
                           const std::string& unknown_why) {
    if (!configured) return "not configured";
    if (plan.run == RunAction::none || plan.run == RunAction::reap) return "starts afresh";
    if (plan.then == ConfigAction::keep)
        return unknown_why.empty() ? "spec unchanged" : "spec unknown, kept: " + unknown_why;
    return unknown_why.empty() ? "spec changed" : "spec unknown: " + unknown_why;
}

}  // namespace

void Supervisor::adopt_leftovers(const Config& config) {
    reap_leftover_probes();
    std::set<std::string> names;
    for (const auto& name : ctx_.cgroups.existing_workers()) names.insert(name);
    for (const auto& name : persisted_worker_names(ctx_.paths.runtime_dir / "state"))
        names.insert(name);
    for (const auto& name : names) adopt_one(name, config);
}

void Supervisor::adopt_one(const std::string& name, const Config& config) {
    std::filesystem::path state_dir = ctx_.paths.runtime_dir / "state";
    CgroupDir dir = ctx_.cgroups.worker(name);
    std::string cgroup_in_proc = dir.path_in_mount(ctx_.cgroup_mount);
    FoundWorker found;
    found.name = name;
    found.cgroup_exists = dir.exists();
    found.cgroup_populated = found.cgroup_exists && dir.populated().value_or(true);
    auto persisted = read_persisted_worker(state_dir, name);
    UniqueFd pidfd;
    if (persisted) {
        found.persisted = *persisted;
        if (found.cgroup_populated)
            pidfd = open_main_process(*found.persisted, ctx_.paths, cgroup_in_proc);
    } else if (persisted.error().code != ENOENT) {
        found.state_unreadable = true;
        std::optional<FoundMain> main;
        if (found.cgroup_populated) main = find_main_in_cgroup(dir, ctx_.paths, cgroup_in_proc);
        spdlog::warn("{}: cannot read its state file ({}){}", name, persisted.error().message(),
                     main ? "; adopting the run from its cgroup, main process pid " +
                                std::to_string(main->pid)
                          : "");
        if (main) {
            found.persisted = found_in_cgroup(name, *main, dir.frozen().value_or(false));
            pidfd = std::move(main->pidfd);
        }
    }
    found.main_alive = static_cast<bool>(pidfd);

    const WorkerSpec* now = config.find(name);
    const WorkerSpec* old = nullptr;
    std::string unknown_why;
    if (found.persisted) {
        if (auto snapshot = snapshots_.load(found.persisted->config_snapshot))
            old = (*snapshot)->find(name);
        else
            unknown_why = snapshot.error().message();
    }
    SpecMatch match = !old                  ? SpecMatch::unknown
                      : now && *old == *now ? SpecMatch::same
                                            : SpecMatch::changed;
    AdoptionPlan plan = plan_adoption(found, now != nullptr, match);
    spdlog::info("{}: found {}{}{}; {} ({})", name,
                 found.persisted ? "state " + std::string(state_name(found.persisted->state))
                                 : std::string("no state file"),
                 found.cgroup_exists
                     ? (found.cgroup_populated ? ", a populated cgroup" : ", an empty cgroup")
                     : "",
                 found.main_alive ? ", its main process alive" : "", to_string(plan.run),
                 config_verdict(plan, now != nullptr, unknown_why));

    if (plan.run == RunAction::none) return;
    if (plan.run == RunAction::reap) {
        remove_persisted_worker(state_dir, name);
        return reap_leftover(name);
    }
    if (plan.then == ConfigAction::stop && plan.run != RunAction::adopt &&
        plan.run != RunAction::wind_up) {
        remove_persisted_worker(state_dir, name);  // no run: nothing to stop
        return;
    }
    // The spec the run was started with when known, so that apply() stops or
    // restarts it as a reload would (with its own stop signal and timeout).
    WorkerSpec spec;
    spec.name = name;
    if (old)
        spec = *old;
    else if (now)
        spec = *now;
    auto worker = std::make_unique<Worker>(ctx_, spec);
    Worker* w = worker.get();
    workers_.emplace(name, std::move(worker));
    const PersistedWorker& p = *found.persisted;
    switch (plan.run) {
        case RunAction::adopt:
            w->adopt(p, std::move(pidfd));
            break;
        case RunAction::wind_up:
            w->adopt_exited(p, plan.then != ConfigAction::stop);
            break;
        case RunAction::restore:
        case RunAction::restart_due:
            w->restore(p);
            break;
        case RunAction::none:
        case RunAction::reap:
            break;
    }
    // Spec unknown: apply() would see no difference, so restart it here.
    if (plan.then == ConfigAction::restart && !old && plan.run == RunAction::adopt) w->restart();
}

}  // namespace infervisor
