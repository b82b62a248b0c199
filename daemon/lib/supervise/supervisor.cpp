#include "supervise/supervisor.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <thread>

#include "supervise/drain_record.h"
#include "supervise/worker_launch.h"
#include "workdir/workdir_validation.h"

namespace infervisor {

namespace {

// Kills everything in `dir` and below, waits for it to empty, removes it
// (children first). Bounded: gives up after about a minute of waiting.
Result<size_t> destroy_cgroup_tree(const CgroupDir& dir) {
    size_t killed = dir.procs().value_or({}).size();
    for (const auto& child : dir.children()) {
        auto r = destroy_cgroup_tree(dir.child(child));
        if (!r) return r;
        killed += *r;
    }
    (void)dir.kill();
    for (int i = 0; i < 6000; ++i) {
        auto populated = dir.populated();
        if (!populated || !*populated) break;
        if (i % 100 == 99) (void)dir.kill();
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (auto r = dir.remove(); !r) return r.error();
    return killed;
}

}  // namespace

Supervisor::Supervisor(WorkerContext& ctx)
    : ctx_(ctx),
      snapshots_(ctx.paths.runtime_dir / "state" / ".config"),
      background_(ctx.io),
      monitor_(ctx, background_, [this](const std::string& name) { return view_of(name); }),
      admission_(ctx, [this] { return configured_workers(); }) {
    ctx_.admission = [this](const WorkerSpec& spec) { return admission_.check(spec); };
    ctx_.drained = [this] { return drained_; };
}

Supervisor::~Supervisor() {
    ctx_.admission = {};
    ctx_.drained = {};
}

void Supervisor::restore_drain() {
    auto record = read_drain_record(ctx_.paths.runtime_dir);
    if (!record) return;
    drained_ = true;
    if (*record) {
        drained_were_up_ = **record;
        spdlog::warn(
            "the host is drained (infervisorctl drain): no worker starts until "
            "infervisorctl undrain");
    } else {
        spdlog::error("{}; the host counts as drained, and undrain will start no worker by itself",
                      record->error().message());
    }
}

void Supervisor::drain(DrainDone done) {
    std::vector<Worker*> up;
    for (const auto& [name, worker] : workers_)
        if (worker->state() != WorkerState::stopped && worker->state() != WorkerState::failed &&
            worker->state() != WorkerState::parked)
            up.push_back(worker.get());
    if (!drained_) {
        drained_ = true;
        for (Worker* w : up) drained_were_up_.push_back(w->name());
    }
    if (auto r = write_drain_record(ctx_.paths.runtime_dir, drained_were_up_); !r)
        spdlog::error("the drain is not recorded (a daemon restart would end it): {}",
                      r.error().message());
    if (up.empty()) return done({});
    // Shared by the workers' callbacks; the last one down answers.
    struct Pending {
        std::vector<DrainStep> steps;
        size_t left = 0;
        DrainDone done;
    };
    auto pending = std::make_shared<Pending>(Pending{{}, up.size(), std::move(done)});
    for (Worker* w : up)
        w->drain_stop([pending, name = w->name()](const std::string& how) {
            pending->steps.push_back({name, how});
            if (--pending->left == 0) pending->done(std::move(pending->steps));
        });
}

std::vector<std::string> Supervisor::undrain() {
    if (!drained_) return {};
    drained_ = false;
    if (auto r = remove_drain_record(ctx_.paths.runtime_dir); !r)
        spdlog::error("the drain record stays (a daemon restart would drain again): {}",
                      r.error().message());
    std::vector<std::string> started;
    for (const auto& name : std::exchange(drained_were_up_, {}))
        if (Worker* w = find(name)) {
            w->start();
            started.push_back(name);
        }
    return started;
}

std::optional<WorkDirMonitor::WorkerView> Supervisor::view_of(const std::string& name) const {
    auto active = workers_.find(name);
    auto leaving = retiring_.find(name);
    if (active == workers_.end() && leaving == retiring_.end()) return std::nullopt;
    const Worker& w = active != workers_.end() ? *active->second : *leaving->second;
    WorkerState s = w.state();
    WorkDirMonitor::WorkerView view;
    view.has_processes = s == WorkerState::starting || s == WorkerState::running ||
                         s == WorkerState::stopping || s == WorkerState::suspended || w.exiting();
    view.cgroup = w.cgroup_in_mount();
    return view;
}

void Supervisor::reap_leftover(const std::string& name) {
    CgroupDir dir = ctx_.cgroups.worker(name);
    auto killed = destroy_cgroup_tree(dir);
    if (!killed) {
        spdlog::error("leftover worker cgroup {}: {}", dir.path().string(),
                      killed.error().message());
        return;
    }
    ctx_.events.emit(
        Event{EventKind::leftover_reaped,
              name,
              "removed the cgroup left by an earlier run, killing " + std::to_string(*killed) +
                  " process(es)",
              {{"KILLED_PROCESSES", std::to_string(*killed)}, {"CGROUP", dir.path().string()}}});
}

// An exec probe's attempt ends with its daemon: what an earlier daemon's
// attempts left (in a worker's cgroup, or in the probes/ cgroup of the
// layout before exec probes moved inside the worker's) is killed and removed
// before the runs are adopted.
void Supervisor::reap_leftover_probes() {
    std::vector<CgroupDir> leftovers;
    for (const auto& name : ctx_.cgroups.existing_workers())
        for (auto& probe : ctx_.cgroups.leftover_probes(name)) leftovers.push_back(probe);
    if (CgroupDir retired = ctx_.cgroups.retired_probes(); retired.exists())
        leftovers.push_back(retired);
    for (const auto& dir : leftovers) {
        auto killed = destroy_cgroup_tree(dir);
        if (!killed)
            spdlog::warn("leftover probe cgroup {}: {}", dir.path().string(),
                         killed.error().message());
        else if (*killed > 0)
            spdlog::info("leftover probe cgroup {}: killed {} process(es)", dir.path().string(),
                         *killed);
    }
}

namespace {

OwnedDirs owned_dirs_of(const WorkerSpec& spec) {
    OwnedDirs dirs{spec.workdir.workdir, {}};
    for (const auto& extra : spec.workdir.extra_dirs) dirs.extra_dirs.push_back(extra.path);
    return dirs;
}

}  // namespace

void Supervisor::apply(const Config& config) {
    if (auto id = snapshots_.save(config.files))
        snapshot_id_ = *id;
    else
        spdlog::warn(
            "cannot keep a copy of the configuration ({}); a daemon restart will restart "
            "its workers rather than adopt them",
            id.error().message());
    desired_.clear();
    for (const auto& spec : config.workers) {
        desired_.emplace(spec.name, spec);
        // What its uid owns beyond the default work dir, for the day it is
        // removed (a later daemon must still know: uid_leftovers.h).
        if (spec.user == kDynamicUser)
            if (auto r = record_owned_dirs(ctx_.paths, spec.name, owned_dirs_of(spec)); !r)
                spdlog::warn("{}: {}", spec.name, r.error().message());
    }
    std::vector<std::string> to_retire;
    for (const auto& [name, worker] : workers_) {
        auto it = desired_.find(name);
        if (it == desired_.end() || !(it->second == worker->spec()))
            to_retire.push_back(name);
        else
            worker->set_config_snapshot(snapshot_id_);  // the same spec, now from this one
    }
    for (const auto& name : to_retire) retire(name);
    for (const auto& [name, spec] : desired_)
        if (!workers_.count(name) && !retiring_.count(name) && !removing_.count(name))
            create_and_start(spec);
    std::set<std::string> in_use = {snapshot_id_};
    for (const auto* group : {&workers_, &retiring_})
        for (const auto& [name, worker] : *group)
            in_use.insert(worker->persisted().config_snapshot);
    snapshots_.prune(in_use);
}

void Supervisor::create_and_start(const WorkerSpec& spec) {
    auto worker = std::make_unique<Worker>(ctx_, spec);
    worker->set_config_snapshot(snapshot_id_);
    Worker* raw = worker.get();
    workers_.emplace(spec.name, std::move(worker));
    if (!stopping_all_ && !drained_) raw->start();
}

void Supervisor::retire(const std::string& name) {
    auto node = workers_.extract(name);
    Worker* worker = node.mapped().get();
    retiring_.insert(std::move(node));
    // Changed, not removed: it comes back, and its slots with it.
    auto stop = [worker, comes_back = desired_.count(name) > 0](Worker::Done done) {
        if (comes_back) return worker->stop_saving_slots("a reload that changes it", done);
        worker->stop(std::move(done));
    };
    stop([this, name] {
        // Destroy later: we are inside the worker's own callback.
        boost::asio::post(ctx_.io, [this, name] {
            auto retired = retiring_.extract(name);
            auto it = desired_.find(name);
            if (it != desired_.end() && !workers_.count(name)) {
                retired = {};  // its notify socket goes before the successor binds one
                return create_and_start(it->second);
            }
            if (retired) release_workdir(retired.mapped()->spec());
        });
    });
}

void Supervisor::release_workdir(const WorkerSpec& spec) {
    remove_persisted_worker(ctx_.paths.runtime_dir / "state", spec.name);
    if (auto r = ctx_.workdirs.release(spec.name); !r)
        spdlog::warn("{}: {}", spec.name, r.error().message());
    removed_[spec.name] = spec;
    if (!spec.workdir.remove_on_removal) return;
    auto uid = known_uid(spec, ctx_.paths);
    if (!uid) return;
    start_removal(spec, *uid, [name = spec.name](Result<WorkDirRemoval> r) {
        if (!r) spdlog::error("{}: removing its work dir: {}", name, r.error().message());
    });
}

void Supervisor::remove_workdir(const std::string& name, RemovalMode mode, RemovalDone done) {
    auto refuse = [&](const std::string& why) {
        done(plain_error("worker '" + name + "' " + why));
    };
    if (desired_.count(name))
        return refuse("is configured; remove it from the configuration and reload first");
    if (workers_.count(name) || retiring_.count(name))
        return refuse("is still running or stopping");
    if (removing_.count(name)) return refuse("has its work dir being removed already");
    if (ctx_.workdirs.find(name)) return refuse("still has its work dir in use");
    auto known = removed_.find(name);
    WorkerSpec spec;
    spec.name = name;
    if (known != removed_.end()) {
        spec = known->second;
    } else if (auto had = dynamic_users(ctx_.paths).lookup(name)) {
        // Removed before this daemon started: its dirs as last recorded
        // (issue 26, defect 4: the custom work dir was forgotten, the default
        // path "removed" and the uid freed with that dir still its own).
        spec.user = kDynamicUser;
        OwnedDirs recorded = recorded_owned_dirs(ctx_.paths, name);
        spec.workdir.workdir = recorded.workdir;
        for (const auto& extra : recorded.extra_dirs)
            spec.workdir.extra_dirs.push_back(ExtraDirSpec{extra});
    }
    uid_t uid = 0;  // a default work dir's parents are root's; else the stricter walk
    if (!spec.workdir.workdir.empty())
        if (auto had = known_uid(spec, ctx_.paths)) uid = *had;
    if (mode == RemovalMode::preview) return preview_removal(spec, std::move(done));
    start_removal(spec, uid, std::move(done));
}

void Supervisor::preview_removal(const WorkerSpec& spec, RemovalDone done) {
    WorkDirSpec workdir = spec.workdir;
    workdir.worker = spec.name;
    std::filesystem::path path = resolve_workdir(workdir, ctx_.paths);
    if (auto user = dir_in_use(path))
        return done(plain_error("work dir " + path.string() + " of removed worker '" + spec.name +
                                "' is not removed: it overlaps " + *user + ", which is in use"));
    // A stat only, but off the loop: a custom work dir may be on a slow mount.
    background_.run<Result<WorkDirRemoval>>(
        [path]() -> Result<WorkDirRemoval> {
            std::error_code ec;
            bool existed = std::filesystem::symlink_status(path, ec).type() !=
                           std::filesystem::file_type::not_found;
            return WorkDirRemoval{path, existed, {}};
        },
        std::move(done));
}

void Supervisor::start_removal(const WorkerSpec& spec, uid_t uid, RemovalDone done) {
    std::string name = spec.name;
    WorkDirSpec workdir = spec.workdir;
    workdir.worker = name;
    Paths paths = ctx_.paths;
    std::filesystem::path path = resolve_workdir(workdir, paths);
    std::string why = spec.workdir.remove_on_removal ? "remove_workdir_on_removal" : "request";
    if (auto user = dir_in_use(path))
        return done(plain_error("work dir " + path.string() + " of removed worker '" + name +
                                "' is not removed: it overlaps " + *user + ", which is in use"));
    removing_.insert(name);
    // A uid of its own is cleaned up after too, before it may go to another
    // worker (uid_leftovers.h); a shared user's files are that user's.
    std::optional<uid_t> own_uid;
    if (spec.user == kDynamicUser) own_uid = dynamic_users(paths).lookup(name);
    OwnedDirs owned = owned_dirs_of(spec);
    background_.run<Result<WorkDirRemoval>>(
        [workdir, uid, paths, path, name, own_uid, owned]() -> Result<WorkDirRemoval> {
            std::error_code ec;
            bool existed = std::filesystem::symlink_status(path, ec).type() !=
                           std::filesystem::file_type::not_found;
            if (auto r = remove_unprepared_workdir(workdir, uid, paths); !r) return r.error();
            WorkDirRemoval removal{path, existed};
            if (own_uid)
                removal.cleanup =
                    clean_up_after_uid(paths, name, *own_uid, owned, shared_temp_dirs(), true);
            return removal;
        },
        [this, name, why, done, own_uid](Result<WorkDirRemoval> r) {
            removing_.erase(name);
            // Its files are gone: the worker's own uid may go to another
            // worker, unless something it owned is left.
            if (r && !desired_.count(name) && own_uid) release_uid(name, *own_uid, r->cleanup);
            if (r && r->existed)
                ctx_.events.emit(Event{EventKind::workdir_removed,
                                       name,
                                       "work dir " + r->path.string() + " removed (" + why + ")",
                                       {{"WORKDIR", r->path.string()}, {"REASON", why}}});
            done(std::move(r));
            auto it = desired_.find(name);
            if (it != desired_.end() && !workers_.count(name) && !retiring_.count(name) &&
                !removing_.count(name))
                create_and_start(it->second);
        });
}

void Supervisor::release_uid(const std::string& name, uid_t uid, const UidCleanup& cleanup) {
    for (const auto& e : cleanup.errors)
        spdlog::warn("{}: cleaning up after uid {}: {}", name, uid, e);
    if (!cleanup.uid_may_be_freed()) {
        std::string left;
        for (const auto& p : cleanup.still_owned) left += (left.empty() ? "" : ", ") + p.string();
        spdlog::warn("{}: uid {} stays reserved: {}", name, uid,
                     left.empty() ? "not everything it owned could be removed"
                                  : "it still owns " + left +
                                        " (delete or chown it, then remove-workdir again)");
        return;
    }
    if (auto freed = dynamic_users(ctx_.paths).release(name); !freed)
        return spdlog::warn("{}: {}", name, freed.error().message());
    forget_owned_dirs(ctx_.paths, name);
    spdlog::info("{}: uid {} freed (checkpoints {}, {} temp entries, {} IPC objects removed)", name,
                 uid, cleanup.checkpoints_removed ? "removed" : "none",
                 cleanup.temp_entries_removed, cleanup.ipc_objects_removed);
}

std::optional<std::string> Supervisor::dir_in_use(const std::filesystem::path& dir) const {
    auto overlaps = [&](const std::filesystem::path& used) {
        return is_within(dir, used) || is_within(used, dir);
    };
    for (const auto& [name, spec] : desired_) {
        WorkDirSpec workdir = spec.workdir;
        workdir.worker = name;
        std::filesystem::path own = resolve_workdir(workdir, ctx_.paths);
        if (overlaps(own)) return "worker '" + name + "' work dir " + own.string();
        for (const auto& extra : spec.workdir.extra_dirs)
            if (overlaps(extra.path))
                return "worker '" + name + "' extra dir " + extra.path.string();
    }
    for (const auto& used : ctx_.workdirs.protected_paths())
        if (overlaps(used)) return "the protected dir " + used.string();
    return std::nullopt;
}

void Supervisor::stop_all(std::function<void()> done) {
    stopping_all_ = true;
    auto remaining = std::make_shared<size_t>(workers_.size() + retiring_.size());
    // Everything stopped on purpose: nothing for a next daemon to adopt.
    auto all_down = [this, done] {
        for (const auto& name : persisted_worker_names(ctx_.paths.runtime_dir / "state"))
            remove_persisted_worker(ctx_.paths.runtime_dir / "state", name);
        snapshots_.prune({});
        if (done) done();
    };
    auto finish = [remaining, all_down] {
        if (--*remaining == 0) all_down();
    };
    if (*remaining == 0) return all_down();
    // Within the unit's TimeoutStopSec (2 min): a save of at most 1 min,
    // then stop_timeout (30s by default).
    for (auto& [name, worker] : workers_)
        worker->stop_saving_slots("the daemon's stop", finish, kSaveBeforeDaemonStop);
    for (auto& [name, worker] : retiring_) worker->stop(finish);
}

Worker* Supervisor::find(const std::string& name) {
    auto it = workers_.find(name);
    return it == workers_.end() ? nullptr : it->second.get();
}

std::vector<Worker*> Supervisor::configured_workers() {
    std::vector<Worker*> out;
    for (const auto& [name, worker] : workers_) out.push_back(worker.get());
    return out;
}

std::vector<const Worker*> Supervisor::workers() const {
    std::vector<const Worker*> out;
    for (const auto& [name, worker] : workers_) out.push_back(worker.get());
    return out;
}

std::string Supervisor::summary() const {
    std::map<WorkerState, size_t> counts;
    for (const auto& [name, worker] : workers_) ++counts[worker->state()];
    std::string out =
        std::to_string(workers_.size()) + " worker" + (workers_.size() == 1 ? "" : "s");
    std::string parts;
    for (const auto& [state, n] : counts)
        parts +=
            (parts.empty() ? "" : ", ") + std::to_string(n) + " " + std::string(state_name(state));
    return parts.empty() ? out : out + ": " + parts;
}

}  // namespace infervisor
