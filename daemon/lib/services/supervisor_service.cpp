#include "services/supervisor_service.h"

#include <cstdlib>
#include <map>

#include "base/signal_names.h"
#include "config/config_loader.h"
#include "services/config_check_helper.h"
#include "services/event_recorder.h"
#include "supervise/worker_view_of.h"

namespace infervisor {

namespace {

// For actions on several workers that each settle later: answers `done`
// once, with the first failure, or success when every worker has settled.
using Settle = std::function<void(const std::string& name, bool ok, const std::string& why)>;
Settle settle_all(size_t count, SupervisorApi::ActionDone done) {
    struct Tally {
        size_t remaining;
        SupervisorApi::ActionDone done;
        std::optional<ActionOutcome> failure;
    };
    auto tally = std::make_shared<Tally>(Tally{count, std::move(done), std::nullopt});
    return [tally](const std::string& name, bool ok, const std::string& why) {
        if (!ok && !tally->failure) tally->failure = ActionOutcome::failure(name, why);
        if (--tally->remaining == 0) tally->done(tally->failure.value_or(ActionOutcome::success()));
    };
}

nlohmann::json size_json(ByteLimit v) { return format_size(v); }

const char* restart_mode_name(RestartMode m) {
    switch (m) {
        case RestartMode::never:
            return "never";
        case RestartMode::on_failure:
            return "on-failure";
        case RestartMode::always:
            return "always";
    }
    return "?";
}

nlohmann::json probes_to_json(const ProbesSpec& probes) {
    nlohmann::json out = nlohmann::json::object();
    for (ProbeRole role : {ProbeRole::startup, ProbeRole::readiness, ProbeRole::liveness}) {
        const auto& p = probes.of(role);
        if (!p) continue;
        nlohmann::json j = {{"kind", probe_kind_name(p->kind)},
                            {"target", describe_probe(*p)},
                            {"initial_delay", format_duration(p->initial_delay)},
                            {"interval", format_duration(p->interval)},
                            {"timeout", format_duration(p->timeout)},
                            {"failure_threshold", p->failure_threshold},
                            {"success_threshold", p->success_threshold}};
        if (p->kind == ProbeKind::http)
            j["status"] = std::to_string(p->status_min) + "-" + std::to_string(p->status_max);
        if (p->kind == ProbeKind::exec) j["command"] = p->command;
        out[std::string(probe_role_name(role))] = std::move(j);
    }
    return out;
}

}  // namespace

nlohmann::json spec_to_json(const WorkerSpec& s) {
    nlohmann::json rules = nlohmann::json::array();
    for (const auto& r : s.rules) rules.push_back(r.name);
    return {
        {"name", s.name},
        {"command", s.command},
        {"environment", s.environment},
        {"user", s.user},
        {"group", s.group},
        {"supplementary_groups", s.supplementary_groups},
        {"memory",
         {{"max", size_json(s.memory.max)},
          {"high", size_json(s.memory.high)},
          {"swap_max", size_json(s.memory.swap_max)},
          {"reserve", s.memory.reserve ? size_json(s.memory.reserve) : nlohmann::json(nullptr)}}},
        {"pids_max", s.pids_max ? nlohmann::json(*s.pids_max) : nlohmann::json("max")},
        {"cpu_weight", s.cpu_weight ? nlohmann::json(*s.cpu_weight) : nlohmann::json(nullptr)},
        {"oom_score_adj", s.oom_score_adj},
        {"restart",
         {{"policy", restart_mode_name(s.restart.mode)},
          {"backoff_initial", format_duration(s.restart.backoff_initial)},
          {"backoff_max", format_duration(s.restart.backoff_max)},
          {"start_limit_burst", s.restart.start_limit_burst},
          {"start_limit_interval", format_duration(s.restart.start_limit_interval)}}},
        {"stop",
         {{"signal", signal_name(s.stop_signal)}, {"timeout", format_duration(s.stop_timeout)}}},
        {"notify", s.notify},
        {"private_tmp", s.private_tmp},
        // "learned": none given, so one it sends unasked holds it to its pace.
        {"watchdog", s.watchdog.count() <= 0 && s.learn_watchdog ? std::string("learned")
                                                                 : format_duration(s.watchdog)},
        {"checkpoint",
         {{"signal", signal_name(s.checkpoint.signal)},
          {"timeout", format_duration(s.checkpoint.timeout)},
          {"interval", format_duration(s.checkpoint.interval)},
          {"keep", s.checkpoint.keep}}},
        {"priority", s.priority},
        {"protected", s.is_protected},
        {"preemptible", s.preemptible},
        {"suspend",
         {{"method", suspend_method_name(s.suspend.method)},
          {"level", s.suspend.level},
          {"gpu", s.suspend.release_gpu ? "release" : "keep"}}},
        {"admission", s.overcommit ? "overcommit" : "check"},
        {"workdir", s.workdir.workdir.string()},
        {"rules", rules},
        {"start_timeout", format_duration(s.start_timeout)},
        {"probes", probes_to_json(s.probes)},
    };
}

SupervisorService::SupervisorService(WorkerContext& ctx, Supervisor& supervisor,
                                     const EventRing& recent, ReloadFunction reload)
    : ctx_(ctx),
      supervisor_(supervisor),
      recent_(recent),
      reload_(std::move(reload)),
      checks_(ctx.io, kMaxChecks, kCheckDeadline, kCheckNice) {}

SupervisorService::~SupervisorService() = default;

ConfigCheckHelper SupervisorService::default_check_helper() {
    ConfigCheckHelper helper;
    helper.deadline = kCheckDeadline;
    // As the daemon's own lookups (app/daemon.cpp): never ask our own
    // userdb server, which would answer from the loop.
    if (const char* bypass = std::getenv("SYSTEMD_BYPASS_USERDB"))
        helper.environment.push_back(std::string("SYSTEMD_BYPASS_USERDB=") + bypass);
    return helper;
}

std::vector<WorkerView> SupervisorService::list_workers() const {
    std::vector<WorkerView> out;
    for (const Worker* w : supervisor_.workers()) out.push_back(view_of(*w, ctx_.clock.now()));
    return out;
}

std::vector<GpuCardView> SupervisorService::list_gpus() const {
    std::vector<GpuCardView> out;
    if (!ctx_.gpu_devices) return out;
    auto devices = ctx_.gpu_devices();
    if (!devices) return out;  // none read
    for (const GpuDevice& d : *devices)
        out.push_back({d.index, d.pci_bus_id, d.vendor, d.name, d.memory_total, d.memory_used,
                       d.utilization, d.fault});
    return out;
}

std::optional<WorkerDetail> SupervisorService::get_worker(const std::string& name) const {
    for (const Worker* w : supervisor_.workers())
        if (w->name() == name)
            return WorkerDetail{view_of(*w, ctx_.clock.now()), spec_to_json(w->spec())};
    return std::nullopt;
}

std::optional<TraceRecorder::Chunk> SupervisorService::trace(uint64_t from) const {
    if (!trace_) return std::nullopt;
    return trace_(from);
}

std::vector<ControlEvent> SupervisorService::recent_events(const EventQuery& query) const {
    return recent_.select(query);
}

void SupervisorService::validate_config(ConfigTexts texts, const PeerCredentials& caller,
                                        ValidateDone done) {
    // In a helper with the caller's rights (config_check_helper.h): the
    // thread only waits for it, and what the check costs leaves with it.
    HelperIdentity identity{caller.uid, caller.gid, caller.groups};
    // Taken here, on the loop: the GPU reading is the loop's.
    std::optional<std::vector<GpuDevice>> gpus;
    if (ctx_.gpu_devices)
        if (auto known = ctx_.gpu_devices()) gpus = std::move(*known);
    auto job = [texts = std::move(texts), identity, helper = check_helper_,
                gpus = std::move(gpus)] {
        return check_config_in_helper(texts, identity, helper, gpus);
    };
    auto answer = [done](ConfigLoadRunner::Status status, std::optional<LoadedConfig> loaded) {
        if (status == ConfigLoadRunner::Status::timed_out)
            return done(ValidationOutcome::refused("the check took longer than " +
                                                   format_duration(kCheckDeadline) +
                                                   " and was abandoned"));
        if (!loaded->not_checked.empty())
            return done(ValidationOutcome::refused(loaded->not_checked));
        done({true, loaded->errors.lines(), loaded->errors.warning_lines(), {}});
    };
    if (!checks_.run(std::move(job), std::move(answer)))
        done(ValidationOutcome::refused(std::to_string(kMaxChecks) +
                                        " configuration checks are already running (the "
                                        "limit); try again when they are done"));
}

std::optional<std::vector<Worker*>> SupervisorService::resolve(
    const std::vector<std::string>& names, ActionDone& done) {
    std::vector<Worker*> out;
    for (const auto& n : names) {
        Worker* w = supervisor_.find(n);
        if (!w) {
            done(ActionOutcome::not_found(n));
            return std::nullopt;
        }
        out.push_back(w);
    }
    return out;
}

void SupervisorService::start_and_watch(const std::vector<Worker*>& workers, StartWatch::Kind kind,
                                        ActionDone done) {
    struct Watches {
        std::vector<std::string> names;  // in the order asked for
        std::map<std::string, StartWatch> by_name;
        ActionDone done;
        EventBus::SinkId sink = 0;
    };
    auto watches = std::make_shared<Watches>();
    watches->done = std::move(done);
    for (Worker* w : workers)
        if (watches->by_name.emplace(w->name(), StartWatch(kind)).second)
            watches->names.push_back(w->name());
    // Answers once every watch is decided (the first failure, in the order
    // asked for); true when it did.
    auto answer_if_decided = [watches] {
        for (const auto& [name, watch] : watches->by_name)
            if (!watch.decided()) return false;
        for (const auto& name : watches->names) {
            const auto& watch = watches->by_name.at(name);
            if (!watch.started()) {
                watches->done(ActionOutcome::failure(name, watch.why()));
                return true;
            }
        }
        watches->done(ActionOutcome::success());
        return true;
    };
    // Subscribed before the requests: a start may succeed or fail at once.
    watches->sink = ctx_.events.subscribe([this, watches, answer_if_decided](const Event& e) {
        if (watches->sink == 0) return;
        if (e.kind == EventKind::config_reloaded) {
            for (auto& [name, watch] : watches->by_name)
                if (!supervisor_.find(name)) watch.on_removed();
        } else if (auto it = watches->by_name.find(e.worker); it != watches->by_name.end()) {
            it->second.on_event(e);
        }
        if (!answer_if_decided()) return;
        ctx_.events.unsubscribe(watches->sink);
        watches->sink = 0;
    });
    for (Worker* w : workers) kind == StartWatch::Kind::start ? w->start() : w->restart();
    if (watches->sink == 0) return;  // answered while asking
    for (Worker* w : workers)
        watches->by_name.at(w->name()).on_state(w->state(), w->state_reason());
    if (!answer_if_decided()) return;
    ctx_.events.unsubscribe(watches->sink);
    watches->sink = 0;
}

namespace {
const char* const kDrainedWhy =
    "the host is drained (infervisorctl drain): nothing starts until infervisorctl undrain";
}  // namespace

void SupervisorService::start(const std::vector<std::string>& names, ActionDone done) {
    auto workers = resolve(names, done);
    if (!workers) return;
    if (supervisor_.drained() && !workers->empty())
        return done(ActionOutcome::failure(workers->front()->name(), kDrainedWhy));
    start_and_watch(*workers, StartWatch::Kind::start, std::move(done));
}

void SupervisorService::restart(const std::vector<std::string>& names, ActionDone done) {
    auto workers = resolve(names, done);
    if (!workers) return;
    if (supervisor_.drained() && !workers->empty())
        return done(ActionOutcome::failure(workers->front()->name(), kDrainedWhy));
    start_and_watch(*workers, StartWatch::Kind::restart, std::move(done));
}

void SupervisorService::stop(const std::vector<std::string>& names, ActionDone done) {
    auto workers = resolve(names, done);
    if (!workers) return;
    if (workers->empty()) return done(ActionOutcome::success());
    auto remaining = std::make_shared<size_t>(workers->size());
    for (Worker* w : *workers)
        w->stop([remaining, done] {
            if (--*remaining == 0) done(ActionOutcome::success());
        });
}

void SupervisorService::kill(const std::string& name, int signal, ActionDone done) {
    Worker* w = supervisor_.find(name);
    if (!w) return done(ActionOutcome::not_found(name));
    auto r = w->kill(signal);
    done(r ? ActionOutcome::success() : ActionOutcome::failure(name, r.error().message()));
}

void SupervisorService::checkpoint(const std::vector<std::string>& names, ActionDone done) {
    auto workers = resolve(names, done);
    if (!workers) return;
    if (workers->empty()) return done(ActionOutcome::success());
    // Answered once: with the first failure, or success when all are written.
    Settle settle = settle_all(workers->size(), std::move(done));
    for (Worker* w : *workers) {
        std::string name = w->name();
        auto r = w->checkpoint_now([settle, name](const WorkerCheckpoints::Outcome& o) {
            settle(name, o.published, o.detail);
        });
        if (!r) settle(name, false, r.error().message());
    }
}

void SupervisorService::suspend(const std::vector<std::string>& names, ActionDone done) {
    auto workers = resolve(names, done);
    if (!workers) return;
    if (workers->empty()) return done(ActionOutcome::success());
    Settle settle = settle_all(workers->size(), std::move(done));
    for (Worker* w : *workers) {
        std::string name = w->name();
        auto r = w->suspend("infervisorctl", [settle, name](const WorkerSuspension::Outcome& o) {
            settle(name, o.ok, o.detail);
        });
        if (!r) settle(name, false, r.error().message());
    }
}

void SupervisorService::resume(const std::vector<std::string>& names, ActionDone done) {
    auto workers = resolve(names, done);
    if (!workers) return;
    if (workers->empty()) return done(ActionOutcome::success());
    Settle settle = settle_all(workers->size(), std::move(done));
    for (Worker* w : *workers) {
        std::string name = w->name();
        auto r = w->resume("infervisorctl", [settle, name](const WorkerSuspension::Outcome& o) {
            settle(name, o.ok, o.detail);
        });
        if (!r) settle(name, false, r.error().message());
    }
}

void SupervisorService::reload(ChangeMode mode, ReloadDone done) { reload_(mode, std::move(done)); }

void SupervisorService::remove_workdir(const std::string& name, ChangeMode mode,
                                       RemoveWorkDirDone done) {
    auto removal = mode == ChangeMode::preview ? Supervisor::RemovalMode::preview
                                               : Supervisor::RemovalMode::remove;
    supervisor_.remove_workdir(name, removal, [name, done](Result<Supervisor::WorkDirRemoval> r) {
        if (!r) return done({ActionOutcome::failure(name, r.error().message()), {}, false});
        ActionOutcome ok = ActionOutcome::success();
        ok.worker = name;
        done({ok, r->path.string(), r->existed});
    });
}

CheckpointListing SupervisorService::list_checkpoints(const std::string& name) const {
    CheckpointListing listing;
    const Worker* w = nullptr;
    for (const Worker* candidate : supervisor_.workers())
        if (candidate->name() == name) w = candidate;
    if (!w) {
        listing.outcome = ActionOutcome::not_found(name);
        return listing;
    }
    listing.directory = (ctx_.paths.state_dir / "checkpoints" / name).string();
    auto listed = w->checkpoints().list();
    if (!listed) {
        listing.outcome = ActionOutcome::failure(name, listed.error().message());
        return listing;
    }
    for (const auto& c : *listed)
        listing.checkpoints.push_back({CheckpointStore::sequence_name(c.stored.sequence),
                                       c.stored.sequence, c.written_at, c.bytes, c.criu,
                                       c.next_restore, c.llama_server});
    return listing;
}

void SupervisorService::delete_checkpoints(const std::string& name,
                                           const CheckpointSelection& selection,
                                           const PeerCredentials& caller, CheckpointsDeleted done) {
    Worker* w = supervisor_.find(name);
    if (!w) return done({ActionOutcome::not_found(name), {}});
    auto deleted = w->delete_checkpoints(selection.ids, selection.all, caller.uid);
    if (!deleted) return done({ActionOutcome::failure(name, deleted.error().message()), {}});
    CheckpointDeletion out;
    for (const auto& c : *deleted)
        out.deleted.push_back(CheckpointStore::sequence_name(c.sequence));
    done(std::move(out));
}

Subscription SupervisorService::subscribe(EventSink sink) {
    auto id = ctx_.events.subscribe([sink](const Event& e) { sink(to_control_event(e)); });
    return Subscription([this, id] { ctx_.events.unsubscribe(id); });
}

void SupervisorService::drain(DrainDone done) {
    supervisor_.drain([done = std::move(done)](std::vector<Supervisor::DrainStep> steps) {
        DrainOutcome outcome;
        for (auto& s : steps) outcome.steps.push_back({std::move(s.worker), std::move(s.how)});
        done(std::move(outcome));
    });
}

std::vector<std::string> SupervisorService::undrain() { return supervisor_.undrain(); }

bool SupervisorService::drained() const { return supervisor_.drained(); }

}  // namespace infervisor
