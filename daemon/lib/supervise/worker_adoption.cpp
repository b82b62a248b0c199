// Worker: persisting its state and taking over a run an earlier daemon
// started (see adoption.h, persisted_worker.h).
#include <spdlog/spdlog.h>
#include <sys/wait.h>

#include "base/signal_names.h"
#include "base/units.h"
#include "supervise/worker.h"
#include "supervise/worker_credentials.h"
#include "supervise/worker_launch.h"

namespace infervisor {

namespace asio = boost::asio;

namespace {

std::filesystem::path state_dir_of(const Paths& paths) { return paths.runtime_dir / "state"; }

}  // namespace

PersistedWorker Worker::persisted() const {
    PersistedWorker p;
    p.name = spec_.name;
    p.config_snapshot = config_snapshot_;
    p.state = state_;
    if (run_) {
        p.pid = run_->pid;
        p.pid_start_time = run_->pid_start_time;
        p.started_at = run_->started_at;
        p.stop_requested = run_->stop_requested;
        p.restart_requested = run_->restart_requested;
        p.policy_then = run_->policy_then;
    }
    p.policy_rule = policy_rule();
    p.restarts = tracker_.history();
    p.host_kills = host_kills_.history();
    p.last_exit = last_exit_;
    p.status_text = status_text_;
    p.checkpoint = parked_checkpoint_;
    if (state_ == WorkerState::suspended) {
        p.suspended_by = suspension_.trigger();
        p.suspended_since = suspension_.since();
        p.suspended_memory = suspension_.memory_before();
        p.suspended_starting = run_ && run_->resume_to == WorkerState::starting;
        p.suspended_engine_slept = suspension_.engine_asleep();
        p.suspended_step = suspension_.step_name();
    }
    return p;
}

void Worker::persist() const {
    if (auto r = write_persisted_worker(state_dir_of(ctx_.paths), persisted()); !r)
        spdlog::warn("{}: cannot persist its state (a daemon restart would not adopt it): {}",
                     spec_.name, r.error().message());
}

void Worker::set_config_snapshot(std::string id) {
    if (config_snapshot_ == id) return;
    config_snapshot_ = std::move(id);
    persist();
}

Result<void> Worker::rebind_after_adoption() {
    auto who = resolve_identity(spec_, ctx_.paths);
    if (!who) return who.error();
    WorkDirSpec workdir = spec_.workdir;
    workdir.worker = spec_.name;
    auto dirs = ctx_.workdirs.prepare(workdir, who->uid, who->gid);
    if (!dirs) return dirs.error();
    auto checkpoint_dirs = checkpoints_.adopt_run(who->uid, who->gid);
    if (!checkpoint_dirs) return checkpoint_dirs.error();
    if (!notify_) {
        auto sock =
            NotifySocket::bind(ctx_.paths.runtime_dir / "notify" / spec_.name, who->uid, who->gid);
        if (!sock) return sock.error();
        notify_.emplace(std::move(*sock));
        watch_notify();
    }
    // As the earlier daemon started it (the restore dir no longer matters).
    run_->launched =
        launch_request(*who,
                       {notify_->path(), dirs->workdir, dirs->tmpdir, checkpoint_dirs->staging,
                        spec_.credentials.empty() ? std::filesystem::path{}
                                                  : credentials_dir(ctx_.paths, spec_.name),
                        std::nullopt},
                       // The devices as they resolve now (an exec probe's view); none
                       // when they no longer do.
                       assign_gpus().value_or(GpuAssignment{}).environment);
    return {};
}

void Worker::take_over_history(const PersistedWorker& p) {
    tracker_.restore(p.restarts);
    host_kills_.restore(p.host_kills);
    last_exit_ = p.last_exit;
    status_text_ = p.status_text;
    config_snapshot_ = p.config_snapshot;
}

void Worker::adopt(const PersistedWorker& p, UniqueFd pidfd) {
    take_over_history(p);
    run_.emplace();  // the run the earlier daemon started
    run_->stage = WorkerRun::Stage::live;
    run_->pid = p.pid;
    run_->pid_start_time = p.pid_start_time;
    run_->adopted = true;
    TimePoint now = ctx_.clock.now();
    run_->started_at = p.started_at && *p.started_at <= now ? *p.started_at : now;
    run_->killed_by_policy = p.policy_then.has_value();
    run_->policy_then = p.policy_then;
    run_->policy_rule = p.policy_rule;
    run_->pidfd = std::make_unique<asio::posix::stream_descriptor>(ctx_.io, pidfd.release());
    bool suspended = p.state == WorkerState::suspended;
    bool ready = suspended ? !p.suspended_starting : p.state != WorkerState::starting;
    // A run that was serving has passed its gate; one still loading waits
    // for READY=1 and its gate probe anew (a probe answers again, READY=1
    // is not repeated: a notify worker loading across the restart runs into
    // its start_timeout unless it says READY=1 again).
    run_->ready_notified = run_->gate_passed = ready;
    WorkerState run_state = ready ? WorkerState::running : WorkerState::starting;
    // A suspended run stays frozen: thawed, it could walk straight back into
    // the pressure that stopped it.
    if (!suspended || !adopt_suspension(p, run_state)) set_state(run_state, WorkerMove::adopt);
    auto uptime = std::chrono::duration_cast<Duration>(now - *run_->started_at);
    std::string rebind_note;
    auto rebound = rebind_after_adoption();
    if (!rebound) {
        rebind_note = "; " + rebound.error().message();
        spdlog::warn("{}: adopted, but {} (no notify messages, probes or checkpoints)", spec_.name,
                     rebound.error().message());
    }
    std::string reason = state_reason();
    emit(EventKind::adopted,
         "adopted: pid " + std::to_string(run_->pid) + " " + std::string(state_name(state_)) +
             (reason.empty() ? "" : " (" + reason + ")") + " for " + format_duration(uptime) +
             ", left by an earlier daemon" + rebind_note,
         {{"PID", std::to_string(run_->pid)},
          {"UPTIME_MS", milliseconds_text(uptime)},
          {"STATE", std::string(state_name(state_))},
          {"CGROUP", cgroup_in_mount()},
          {"RESTARTS", std::to_string(tracker_.total_restarts())}});
    watch_exit();
    bool frozen = state_ == WorkerState::suspended;  // its resume starts what it pauses
    if (!frozen) arm_watchdog();                     // the heartbeat deadline counts from now
    // Without the rebind there is no identity to run exec probes as and no
    // staging dir to publish from.
    if (rebound) {
        checkpoints_.run_started(checkpoint_signaller());
        if (probes_ && !frozen) probes_->run_started(run_->launched);
        if (ready) {
            if (probes_ && !frozen) probes_->loading_over();
            checkpoints_.run_ready(*run_->started_at, false);
        }
    }
    if (!ready && !frozen && loading_gated() && spec_.start_timeout.count() > 0) {
        // What is left of start_timeout: a daemon restart does not extend it.
        auto left = std::max(Duration(0), spec_.start_timeout - uptime);
        start_timer_->arm(left, [this] { on_start_timeout(); });
    }
    if (p.state != WorkerState::stopping) return;
    // Carry on what the earlier daemon was doing.
    if (p.policy_then && !p.stop_requested)
        (void)stop_by_policy(*p.policy_then, p.policy_rule);
    else if (p.restart_requested)
        restart();
    else
        stop();
}

bool Worker::adopt_suspension(const PersistedWorker& p, WorkerState run_state) {
    // An older daemon's state file does not say who suspended it.
    std::string trigger =
        p.suspended_by.empty() ? std::string(kSuspendedBeforeUpgrade) : p.suspended_by;
    auto configured = [this] {
        if (auto r = ctx_.write_limits(cgroup(), limits_of(spec_)); !r)
            spdlog::warn("{}: its limits could not be written back: {}", spec_.name,
                         r.error().message());
    };
    auto adopted = suspension_.adopt(
        cgroup(), std::move(trigger), p.suspended_since.value_or(ctx_.clock.now()),
        p.suspended_memory, configured, suspend_engine_step(p.suspended_step),
        p.suspended_engine_slept);
    if (!adopted) {
        spdlog::warn(
            "{}: adopted suspended, but cannot keep it frozen ({}); it runs with its "
            "configured limits",
            spec_.name, adopted.error().message());
        configured();
        return false;
    }
    run_->resume_to = run_state;
    set_state(WorkerState::suspended, WorkerMove::adopt);
    return true;
}

void Worker::adopt_exited(const PersistedWorker& p, bool restart_policy) {
    take_over_history(p);
    run_.emplace();  // the run that ended unwatched, to be wound up
    run_->stage = WorkerRun::Stage::exiting;
    run_->pid = p.pid;
    run_->started_at = p.started_at;
    run_->killed_by_policy = p.policy_then.has_value();
    run_->policy_then = p.policy_then;
    run_->policy_rule = p.policy_rule;
    // A stop that was under way has happened; a restart that was asked for
    // still comes.
    run_->stop_requested = p.stop_requested || !restart_policy;
    run_->restart_requested = p.restart_requested && restart_policy;
    set_state(p.state == WorkerState::starting ? WorkerState::starting : WorkerState::running,
              WorkerMove::adopt);

    ExitReason reason{ExitStatus::killed_by(SIGKILL)};
    reason.status_unknown = true;
    reason.while_unsupervised = true;
    // After an in-place re-execution the main process is still our child:
    // its zombie tells how it ended. Any other pid is not ours to reap.
    siginfo_t info{};
    if (p.pid > 0 && ::waitid(P_PID, static_cast<id_t>(p.pid), &info, WEXITED | WNOHANG) == 0 &&
        info.si_pid == p.pid) {
        reason.status = exit_status_from(info);
        reason.status_unknown = false;
    }
    reason.stop_requested = run_->stop_requested;
    reason.killed_by_policy = run_->killed_by_policy;
    CgroupDir dir = cgroup();
    bool cgroup_exists = dir.exists();
    if (cgroup_exists) {
        reason.oom_kills = dir.memory_event("oom_kill");
        reason.limit_ooms = dir.memory_event("oom");
    }
    std::vector<std::pair<std::string, std::string>> fields = {{"PID", std::to_string(p.pid)},
                                                               {"WHILE_UNSUPERVISED", "1"}};
    reason.append_fields(fields);
    emit(EventKind::exited, reason.describe(), fields);
    if (!cgroup_exists) return finish_run(reason);
    auto populated = dir.populated();
    if (populated && *populated) (void)dir.kill();  // what the main process left behind
    after_empty([this, reason] {
        if (auto r = cgroup().remove_tree(); !r)
            spdlog::warn("{}: {}", spec_.name, r.error().message());
        finish_run(reason);
    });
}

void Worker::restore(const PersistedWorker& p) {
    take_over_history(p);
    switch (p.state) {
        case WorkerState::failed:
            return set_state(p.state, WorkerMove::adopt);
        case WorkerState::parked:
            parked_rule_ = p.policy_rule;  // resume_when asks which rule parked it
            parked_checkpoint_ = p.checkpoint;
            return set_state(p.state, WorkerMove::adopt);
        case WorkerState::backoff:
            return launch();
        default:
            return persist();  // stopped
    }
}

}  // namespace infervisor
