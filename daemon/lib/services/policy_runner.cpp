#include "services/policy_runner.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>

#include "policy/sampler.h"
#include "supervise/policy_options.h"

namespace infervisor {

namespace asio = boost::asio;

namespace {
// "Stalled 15 % of a second": the same trigger as the host's.
const PsiTriggerSpec kPressureTrigger{PsiLine::some, std::chrono::milliseconds(150),
                                      std::chrono::seconds(1)};

// Whether a worker put aside as `state` still waits: a suspended one while
// it is suspended; a parked one from the kill until it is started again
// (its run may still be ending), unless someone stopped it meanwhile.
bool still_waiting(const Worker& w, WorkerState state) {
    if (state == WorkerState::suspended) return w.state() == WorkerState::suspended;
    return w.state() != WorkerState::stopped && w.state() != WorkerState::failed &&
           w.state() != WorkerState::backoff;
}

int64_t wall_ms_now() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace

std::string rule_trigger(std::string_view rule) { return "rule '" + std::string(rule) + "'"; }

PolicyRunner::PolicyRunner(WorkerContext& ctx, Supervisor& supervisor)
    : ctx_(ctx),
      supervisor_(supervisor),
      tick_(ctx.clock.make_timer()),
      wake_timer_(ctx.clock.make_timer()),
      engine_scrapes_(ctx) {
    subscription_ = ctx_.events.subscribe([this](const Event& e) { on_event(e); });
}

PolicyRunner::~PolicyRunner() {
    ctx_.events.unsubscribe(subscription_);
    alive_.reset();
}

void PolicyRunner::on_event(const Event& e) {
    switch (e.kind) {
        case EventKind::started:
            // A new run starts with a clean slate: growth, held conditions, counters.
            record(TraceEventKind::started, e.worker, e.message);
            engine_.forget(e.worker);
            preempted_.erase(e.worker);
            sample_files_.erase(e.worker);
            if (const Worker* w = supervisor_.find(e.worker); w && running_) open_watch(*w);
            return;
        case EventKind::adopted:
            // A run left by an earlier daemon: watched from now on.
            if (const Worker* w = supervisor_.find(e.worker); w && running_) open_watch(*w);
            return;
        case EventKind::oom_killed:
            record(TraceEventKind::exited, e.worker, e.message);
            return;
        case EventKind::exited:
            record(TraceEventKind::exited, e.worker, e.message);
            watches_.erase(e.worker);  // before the cgroup is removed
            sample_files_.erase(e.worker);
            engine_scrapes_.close(e.worker);
            return;
        case EventKind::policy_action:
            // Every action as journaled, the engine's and the others' alike
            // (resume_when, the ladder, the watchdog): what `history` marks.
            record_action(e);
            return;
        case EventKind::resumed:
            // Its memory comes back from swap: not growth, not host thrashing
            // (but running out is still running out: policy_engine.h).
            record(TraceEventKind::resumed, e.worker, e.message);
            engine_.forget(e.worker);
            engine_.resumed(ctx_.clock.now());
            preempted_.erase(e.worker);
            return;
        default:
            return;
    }
}

void PolicyRunner::open_watch(const Worker& worker) {
    const std::string& name = worker.name();
    auto watch = std::make_unique<WorkerSignalWatch>(
        ctx_.io, worker.cgroup().path(), kPressureTrigger,
        [this, name](std::string_view file) {
            request_evaluation(name + ": " + std::string(file));
        },
        signal_files_);
    // One line per worker at info, and again only when the choice changes.
    std::string& logged = watch_logged_[name];
    auto level = logged == watch->description() ? spdlog::level::debug : spdlog::level::info;
    spdlog::log(level, "{}: wake-ups from {}; otherwise sampled every {}", name,
                watch->description(), format_duration(interval_));
    logged = watch->description();
    watches_[name] = std::move(watch);
    engine_scrapes_.open(worker, engine_.rules_for(name));
}

void PolicyRunner::configure(const Config& config) {
    trace_.set_keep(config.daemon.metrics.history);
    configure_engine(engine_, config.daemon);
    engine_.set_default_rules(config.default_rules);
    engine_.set_host_rules(config.host_rules);
    interval_ = config.daemon.sample_interval;
    resume_planner_.configure(config.daemon.resume_when, config.daemon.host_settle);
    dry_run_ = config.daemon.dry_run;
    host_rules_.clear();
    for (const auto& rule : config.host_rules) host_rules_.insert(rule.name);
    std::set<std::string> now;
    for (const auto& w : config.workers) {
        engine_.set_worker_rules(w.name, w.rules);
        engine_scrapes_.set_rules(w.name, engine_.rules_for(w.name));
        if (const Worker* running = supervisor_.find(w.name); running && running->spec() != w)
            preempt_history_.forget(w.name);  // a changed program may not pin the same way
        now.insert(w.name);
    }
    for (const auto& name : known_)
        if (!now.count(name)) {
            engine_.remove_worker(name);
            preempted_.erase(name);
            preempt_history_.forget(name);
            watch_logged_.erase(name);
        }
    known_ = std::move(now);
}

void PolicyRunner::start() {
    running_ = true;
    adopt_preempted();
    arm_tick();
    for (const Worker* w : supervisor_.workers())
        if ((w->state() == WorkerState::running || w->state() == WorkerState::starting) &&
            !w->exiting() && !watches_.count(w->name()))
            open_watch(*w);
    auto trigger = open_psi_trigger(ctx_.paths.procfs / "pressure/memory", kPressureTrigger);
    if (!trigger) {
        spdlog::info("no host memory PSI trigger ({}); sampling every {}",
                     trigger.error().message(), format_duration(interval_));
        return;
    }
    psi_.emplace(std::move(*trigger));
    spdlog::info("host memory PSI trigger: {}{}", format_psi_trigger(psi_->chosen),
                 psi_->rejected.empty() ? "" : " (kernel refused " + psi_->rejected + ")");
    psi_watch_ = std::make_unique<asio::posix::stream_descriptor>(
        ctx_.io, ::fcntl(psi_->fd.get(), F_DUPFD_CLOEXEC, 0));
    arm_psi();
}

// Put aside by a host rule (its name in the state file, or in who suspended
// it), or suspended by a daemon too old to say by whom.
bool PolicyRunner::preempted_by_host_rule(const Worker& w) const {
    if (w.state() == WorkerState::parked) return host_rules_.count(w.policy_rule()) > 0;
    if (w.state() != WorkerState::suspended) return false;
    const std::string& by = w.suspension().trigger();
    if (by == kSuspendedBeforeUpgrade) return true;
    for (const auto& rule : host_rules_)
        if (by == rule_trigger(rule)) return true;
    return false;
}

void PolicyRunner::adopt_preempted() {
    TimePoint now = ctx_.clock.now();
    for (const Worker* w : supervisor_.workers()) {
        if (preempted_.count(w->name()) || !preempted_by_host_rule(*w)) continue;
        // Its wait starts now: the room it needs must hold for resume_when's
        // `for` as seen by this daemon.
        resume_planner_.preempted(now);
        preempted_[w->name()] = {now, w->state()};
        spdlog::info("{}: {} ({}) before this daemon started; resume_when may {} it again",
                     w->name(), state_name(w->state()), w->state_reason(),
                     w->state() == WorkerState::parked ? "start" : "resume");
    }
}

void PolicyRunner::stop() {
    running_ = false;
    tick_->cancel();
    wake_timer_->cancel();
    evaluation_queued_ = false;
    if (psi_watch_) psi_watch_->cancel();
    watches_.clear();
    sample_files_.clear();
    procfs_files_.reset();
    engine_scrapes_.clear();
}

void PolicyRunner::arm_tick() {
    tick_->arm(interval_, [this] {
        if (!running_) return;
        tick_lateness_ =
            std::chrono::duration_cast<std::chrono::microseconds>(ctx_.clock.now() - tick_->due());
        evaluate_now();
        tick_lateness_ = {};
        arm_tick();
    });
}

void PolicyRunner::arm_psi() {
    psi_watch_->async_wait(asio::posix::stream_descriptor::wait_error,
                           [this](const boost::system::error_code& ec) {
                               if (ec || !running_) return;
                               arm_psi();
                               request_evaluation("host memory pressure");
                           });
}

void PolicyRunner::request_evaluation(std::string_view why) {
    spdlog::debug("wake-up: {}{}", why, evaluation_queued_ ? " (evaluation already queued)" : "");
    if (!running_ || evaluation_queued_) return;
    evaluation_queued_ = true;
    TimePoint now = ctx_.clock.now();
    std::weak_ptr<char> alive = alive_;
    if (!last_evaluation_ || now - *last_evaluation_ >= kMinWakeGap) {
        asio::post(ctx_.io, [this, alive] {
            if (!alive.expired()) run_queued_evaluation();
        });
        return;
    }
    wake_timer_->arm(kMinWakeGap - (now - *last_evaluation_), [this] { run_queued_evaluation(); });
}

void PolicyRunner::run_queued_evaluation() {
    if (!evaluation_queued_) return;  // stop() came in between
    evaluation_queued_ = false;
    if (!running_) return;
    woken_ = true;
    evaluate_now();
    woken_ = false;
}

StatFileSet& PolicyRunner::sample_files_of(const Worker& worker) {
    auto it = sample_files_.find(worker.name());
    if (it == sample_files_.end() || it->second.dir().native() != worker.cgroup().path().native())
        it = sample_files_.insert_or_assign(worker.name(), StatFileSet(worker.cgroup().path()))
                 .first;
    return it->second;
}

// A GPU reading is begun at most once per half interval (wake-ups come in
// bursts), and is used for three intervals: a reading that takes longer
// (a hung driver) leaves the GPU figures empty rather than stale.
Duration PolicyRunner::gpu_max_age() const { return interval_ * 3; }

void PolicyRunner::refresh_gpus() {
    if (!gpus_) return;
    std::vector<std::filesystem::path> cgroups;
    if (gpus_->active())  // else an open, now and then (GpuWatch::refresh)
        for (const Worker* w : supervisor_.workers())
            if (w->state() == WorkerState::running || w->state() == WorkerState::starting)
                cgroups.push_back(w->cgroup().path());
    gpus_->refresh(std::move(cgroups), interval_ / 2);
}

void PolicyRunner::evaluate_now() {
    auto began = std::chrono::steady_clock::now();
    EvaluationRound round;
    TimePoint now = ctx_.clock.now();
    last_evaluation_ = now;
    ++evaluations_;
    std::vector<Decision> decisions;
    std::vector<WorkerCandidate> candidates;
    TraceRound traced{now, wall_ms_now(), woken_, {}, {}};
    bool tracing = trace_.keeping();
    refresh_gpus();
    for (const Worker* w : supervisor_.workers()) {
        if (w->state() != WorkerState::running && w->state() != WorkerState::starting) continue;
        if (w->exiting()) continue;
        WorkerSample sample = sample_worker(CgroupStats(sample_files_of(*w)), now);
        sample.started_at = w->started_at();
        sample.ready_at = w->ready_at();
        sample.signals_readiness = w->signals_readiness();
        sample.load_limit = w->spec().start_timeout;
        sample.last_heartbeat = w->last_heartbeat();
        supervisor_.workdir_monitor().fill_sample(w->name(), sample);
        if (w->spec().watchdog.count() > 0) sample.watchdog_interval = w->spec().watchdog;
        engine_scrapes_.take(w->name(), sample, interval_);
        if (gpus_) {
            // dmem.current where the kernel has it (Linux 6.14+) and AMD or
            // Intel cards are read: their regions (services/gpu_watch.h).
            std::vector<DmemRegion> dmem;
            if (gpus_->reads_drm())
                if (auto read = read_dmem_current(w->cgroup())) dmem = std::move(*read);
            gpus_->fill(sample, w->cgroup_in_mount(), w->spec().gpu, gpu_max_age(), dmem);
        }
        PreemptFacts facts = preempt_history_.facts_of(w->name(), w->spec().preemptible,
                                                       w->checkpoints().last_answer_took(), now);
        facts.unload_bound = w->unload_bound();
        facts.keeps_gpu = w->why_suspension_keeps_gpu();
        for (auto& d : engine_.evaluate(w->name(), sample, now, facts.checkpoint_took))
            decisions.push_back(std::move(d));
        if (Worker* shown = supervisor_.find(w->name())) {
            if (auto phase = engine_.phase_of(w->name()))
                shown->set_phase(std::string(phase_name(*phase)),
                                 engine_.serving_baseline(w->name()));
            shown->set_gpu_use(sample.gpu_memory, sample.gpu_utilization, sample.gpu_devices);
        }
        candidates.push_back({w->name(), static_cast<int>(w->spec().priority),
                              w->spec().is_protected, std::move(facts)});
        if (tracing)
            traced.workers.push_back({w->name(), sample, candidates.back(),
                                      engine_.phase_of(w->name()),
                                      engine_.growth_percent_per_min(w->name())});
        if (observer_)
            round.workers.push_back(
                {w->name(), std::move(sample), engine_.growth_percent_per_min(w->name())});
    }
    if (!procfs_files_) procfs_files_.emplace(ctx_.paths.procfs);
    HostSample host = sample_host(*procfs_files_, now);
    if (gpus_) gpus_->fill(host, gpu_max_age());
    for (auto& d : engine_.evaluate_host(host, candidates, now)) decisions.push_back(std::move(d));
    if (tracing) {
        traced.host = host;
        trace_.add(traced);
        for (const auto& d : decisions) record(TraceEventKind::decision, d.worker, d.reason, &d);
    }
    for (const auto& d : decisions) execute(d);
    if (auto d = resume_planner_.evaluate(host, waiting_for_room(), now)) resume(*d);
    if (!observer_) return;
    round.time = now;
    round.host = std::move(host);
    // With the cards gone from the driver's list, in error (GpuWatch::devices).
    if (gpus_ && gpus_->last() && now - gpus_->last()->time <= gpu_max_age())
        round.gpus = gpus_->devices().value_or(std::vector<GpuDevice>{});
    if (gpus_) round.gpu_xids = gpus_->xid_counts();  // counters: stale or not
    round.tick_lateness = tick_lateness_;
    round.evaluation_time = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - began);
    observer_(round);
}

void PolicyRunner::record(TraceEventKind kind, const std::string& worker, std::string text,
                          const Decision* decision) {
    if (!trace_.keeping()) return;
    TraceEvent e{ctx_.clock.now(), wall_ms_now(), kind, worker, {}, {}, false, std::move(text)};
    if (decision) {
        e.rule = decision->rule;
        e.action = std::string(to_string(decision->action));
        e.dry_run = decision->dry_run;
    }
    trace_.add(e);
}

void PolicyRunner::record_action(const Event& e) {
    if (!trace_.keeping()) return;
    TraceEvent traced{ctx_.clock.now(), wall_ms_now(), TraceEventKind::action, e.worker};
    for (const auto& [key, value] : e.fields) {
        if (key == "RULE") traced.rule = value;
        if (key == "ACTION") traced.action = value;
        if (key == "DRY_RUN") traced.dry_run = value == "1";
    }
    trace_.add(traced);
}

void PolicyRunner::note_preemption(const Decision& d) {
    bool parks =
        d.then == Then::park && (d.action == Action::kill || d.action == Action::checkpoint);
    if (d.action != Action::suspend && d.action != Action::kill && d.action != Action::checkpoint)
        return;
    TimePoint now = ctx_.clock.now();
    resume_planner_.preempted(now);  // the room before this does not count for a resume
    if (d.action == Action::suspend)
        preempted_[d.worker] = {now, WorkerState::suspended};
    else if (parks)
        preempted_[d.worker] = {now, WorkerState::parked};
}

std::vector<ResumeCandidate> PolicyRunner::waiting_for_room() {
    std::vector<ResumeCandidate> out;
    for (auto it = preempted_.begin(); it != preempted_.end();) {
        const Worker* w = supervisor_.find(it->first);
        if (!w || !still_waiting(*w, it->second.state)) {
            it = preempted_.erase(it);
            continue;
        }
        // Its GPU memory has nowhere to go back to yet: it waits, and does
        // not hold up the others (the host's memory is another matter).
        if (w->state() == it->second.state && w->gpu_room_to_resume().fits) {
            const MemorySpec& memory = w->spec().memory;
            std::optional<uint64_t> needs = it->second.state == WorkerState::suspended
                                                ? w->suspension().memory_before()
                                                : (memory.reserve ? memory.reserve : memory.max);
            out.push_back({w->name(), static_cast<int>(w->spec().priority), it->second.at, needs,
                           std::string(state_name(it->second.state))});
        }
        ++it;
    }
    return out;
}

void PolicyRunner::resume(const ResumeDecision& d) {
    Worker* worker = supervisor_.find(d.worker);
    std::string result = dry_run_ ? "dry-run: not taken" : worker ? "done" : "no such worker";
    std::vector<std::pair<std::string, std::string>> fields = {
        {"RULE", "resume_when"},
        {"ACTION", "resume"},
        {"DRY_RUN", dry_run_ ? "1" : "0"},
        {"RESULT", result},
    };
    for (const auto& [k, v] : d.measurements) fields.emplace_back(k, v);
    // Journaled first: the cause before its effects (resumed, started).
    ctx_.events.emit(Event{EventKind::policy_action, d.worker,
                           "resume_when: resume" + std::string(dry_run_ ? " (dry run)" : "") +
                               ": " + d.reason + " -> " + result,
                           std::move(fields)});
    if (dry_run_ || !worker) return;
    preempted_.erase(d.worker);
    if (worker->state() != WorkerState::suspended) return worker->start();  // parked
    preempt_history_.resumed(d.worker, ctx_.clock.now());
    std::string trigger = "resume_when '" + resume_planner_.condition()->text + "'";
    if (auto r = worker->resume(trigger); !r)
        spdlog::warn("{}: resume_when: {}", d.worker, r.error().message());
}

Result<void> PolicyRunner::carry_out(Worker& worker, const Decision& d) {
    switch (d.action) {
        case Action::log:
            return {};
        case Action::throttle:
            if (!d.memory_high) return plain_error("no memory.high value to throttle to");
            return worker.throttle(*d.memory_high);
        case Action::freeze:
            return worker.freeze();
        case Action::suspend:
            if (d.ladder)
                return worker.suspend(rule_trigger(d.rule), ladder_goes_on(d), d.for_memory);
            return worker.suspend(rule_trigger(d.rule), {}, d.for_memory);
        case Action::checkpoint:
            if (d.for_memory && d.then != Then::keep_running)
                worker.expect_memory_room(d.scope == RuleScope::host);
            if (d.for_gpu && d.then != Then::keep_running) worker.expect_gpu_room();
            return worker.checkpoint_by_policy(d.then, d.rule);
        case Action::unload:
            preempt_history_.unloaded(d.worker, ctx_.clock.now());
            return worker.unload_models(rule_trigger(d.rule), unload_goes_on(d));
        case Action::preempt:  // the engine decides it as one of the others
        case Action::kill:
            if (d.for_memory) worker.expect_memory_room(d.scope == RuleScope::host);
            if (d.for_gpu) worker.expect_gpu_room();
            return worker.kill_by_policy(d.then, d.rule);
    }
    return {};
}

WorkerSuspension::Finished PolicyRunner::ladder_goes_on(const Decision& d) {
    std::weak_ptr<char> alive = alive_;
    // A rule on the GPUs alone wanted the card's memory back: only the step
    // before the freeze (GPU release, engine sleep) gives it.
    bool on_gpu = d.for_gpu && !d.for_memory;
    return [this, alive, d, on_gpu](const WorkerSuspension::Outcome& o) {
        if (alive.expired() || !o.ok) return;
        if (on_gpu ? o.step_done : !suspension_freed_nothing(o.memory_before, o.bytes_reclaimed))
            return;
        Worker* worker = supervisor_.find(d.worker);
        if (!worker || worker->state() != WorkerState::suspended) return;
        std::string freed =
            on_gpu
                ? "none of its GPU memory (" +
                      (o.step.empty() ? std::string("no GPU release") : o.step + " not done") + ")"
                : human_size(o.bytes_reclaimed) + " of " +
                      (o.memory_before ? human_size(*o.memory_before) : "its memory");
        preempt_history_.suspension_freed_nothing(
            d.worker, "its suspension by rule '" + d.rule + "' freed " + freed);
        if (!on_gpu) freed = "only " + freed;
        // The cause, then its effect: this entry before the kill's exit.
        Decision kill = d;
        kill.action = Action::kill;
        kill.step = RuleStep::escalate;
        kill.reason = "the suspension freed " + freed +
                      (on_gpu ? "" : " (memory pinned, or no room in swap)") +
                      ": the ladder goes on";
        kill.measurements = {{"PREEMPT_STEP", "kill: the suspension freed " + freed},
                             {"SUSPENSION_BYTES_RECLAIMED", std::to_string(o.bytes_reclaimed)}};
        if (o.memory_before)
            kill.measurements.emplace_back("SUSPENSION_MEMORY_BEFORE",
                                           std::to_string(*o.memory_before));
        execute(kill);
    };
}

Worker::UnloadFinished PolicyRunner::unload_goes_on(const Decision& d) {
    std::weak_ptr<char> alive = alive_;
    return [this, alive, d](bool freed, const std::string& what) {
        if (alive.expired() || freed) return;
        Worker* worker = supervisor_.find(d.worker);
        // Called only while the run lasts (Worker::unload_models).
        if (!worker ||
            (worker->state() != WorkerState::running && worker->state() != WorkerState::starting))
            return;
        go_past_unload(d, what);
    };
}

void PolicyRunner::go_past_unload(const Decision& d, const std::string& what) {
    if (!d.if_unload_fails) return;
    Decision next = d;
    next.action = d.if_unload_fails->action;
    next.if_unload_fails.reset();
    next.step = RuleStep::escalate;
    next.reason =
        "the unload freed nothing (" + what + "): the ladder goes on; " + d.if_unload_fails->why;
    next.measurements = {{"PREEMPT_STEP", d.if_unload_fails->why}, {"UNLOAD_RESULT", what}};
    execute(next);
}

void PolicyRunner::execute(const Decision& d) {
    std::string result = d.dry_run ? "dry-run: not taken" : "done";
    Worker* worker = d.worker.empty() ? nullptr : supervisor_.find(d.worker);
    if (!d.dry_run && d.action != Action::log) {
        if (!worker)
            result = "no such worker";
        else if (auto r = carry_out(*worker, d); !r)
            result = "failed: " + r.error().message();
        else if (d.scope == RuleScope::host)
            note_preemption(d);
    }
    std::vector<std::pair<std::string, std::string>> fields = {
        {"RULE", d.rule},
        {"ACTION", std::string(to_string(d.action))},
        {"THEN", std::string(to_string(d.then))},
        {"DRY_RUN", d.dry_run ? "1" : "0"},
        {"RESULT", result},
    };
    if (d.memory_high) fields.emplace_back("NEW_MEMORY_HIGH", std::to_string(*d.memory_high));
    for (const auto& [k, v] : d.measurements) fields.emplace_back(k, v);
    ctx_.events.emit(Event{EventKind::policy_action, d.worker,
                           "rule '" + d.rule + "': " + std::string(to_string(d.action)) +
                               (d.dry_run ? " (dry run)" : "") + ": " + d.reason + " -> " + result,
                           std::move(fields)});
    // An unload that could not even be asked for: the next step now, after
    // the entry that says why.
    if (d.action == Action::unload && !d.dry_run && worker && result != "done")
        go_past_unload(d, result);
}

}  // namespace infervisor
