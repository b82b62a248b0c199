// Worker: the end of a run. Its main process exits (pidfd): it is reaped,
// the exit journaled, what it left in the cgroup killed, the cgroup removed;
// then finish_run() drops the run and decides what follows: stopped, a
// restart after a backoff (once the host has room, after a run ended for
// memory), failed at the start limit, or parked.
#include <signal.h>
#include <spdlog/spdlog.h>

#include "base/units.h"
#include "cgroup/cgroup_stats.h"
#include "policy/stat_files.h"
#include "process/pidfd.h"
#include "supervise/restart_room.h"
#include "supervise/worker.h"
#include "supervise/worker_credentials.h"

namespace infervisor {

namespace {

// The run ended because the host ran out of memory: a host rule's kill, or
// the kernel's OOM kill below the worker's own memory.max.
bool ended_as_the_host_ran_out(const ExitReason& reason, const WorkerRun& run) {
    return (run.killed_by_policy && run.host_ran_out) ||
           (reason.oom_killed() && !reason.oom_at_own_limit());
}

}  // namespace

void Worker::on_exit() {
    auto reaped = reap_main_process();
    if (!reaped) return;  // not reapable yet: watched again
    run_->stage = WorkerRun::Stage::exiting;
    checkpoints_.run_ended();
    suspension_.abandon();
    ExitReason reason = exit_reason_of(*reaped);
    end_run_watches();
    auto peak = value_or_empty(CgroupStats(cgroup()).memory_peak());
    note_room_needed(reason, peak);
    journal_exit(reason, peak);
    empty_cgroup_then_finish(reason);
}

std::optional<Worker::ReapedExit> Worker::reap_main_process() {
    auto status = reap(run_->pidfd->native_handle());
    // An adopted run's main process is not our child: its status is lost.
    bool status_unknown = run_->adopted && !status && status.error().code == ECHILD;
    if (!status_unknown && (!status || !*status)) {
        // Spurious wake-up (or a reap error): wait again rather than guess.
        if (!status) spdlog::error("{}: {}", spec_.name, status.error().message());
        if (status) {
            // Readable but not reapable (a tracer holds the zombie): retry
            // on a timer rather than spin on the descriptor.
            empty_timer_->arm(std::chrono::milliseconds(100), [this] { watch_exit(); });
            return std::nullopt;
        }
    }
    return ReapedExit{status && *status ? std::optional(**status) : std::nullopt, status_unknown};
}

ExitReason Worker::exit_reason_of(const ReapedExit& reaped) const {
    ExitReason reason{reaped.status ? *reaped.status : ExitStatus::killed_by(SIGKILL)};
    reason.status_unknown = reaped.status_unknown;
    reason.oom_kills = cgroup().memory_event("oom_kill");
    reason.limit_ooms = cgroup().memory_event("oom");
    reason.stop_requested = run_->stop_requested;
    reason.killed_by_policy = run_->killed_by_policy;
    if (run_->start_timed_out) {
        reason.no_ready_within = spec_.start_timeout;
        reason.awaited = awaited_signal();
    }
    reason.kill_reason = run_->kill_reason;
    return reason;
}

void Worker::end_run_watches() {
    if (probes_) probes_->run_ended();
    run_->pidfd.reset();
    watchdog_timer_->cancel();
    start_timer_->cancel();
    stop_timer_->cancel();
}

void Worker::note_room_needed(const ExitReason& reason, std::optional<uint64_t> peak) {
    room_needed_.reset();
    gpu_room_needed_.reset();
    if (run_->killed_by_policy && run_->ended_for_gpu && run_->gpu_memory.value_or(0) > 0 &&
        !run_->gpu_devices.empty())
        gpu_room_needed_ = GpuRoomNeeded{*run_->gpu_memory, run_->gpu_devices};
    if (!reason.oom_killed() && !(run_->killed_by_policy && run_->ended_for_memory)) return;
    room_needed_ = room_needed_after({.memory_max = spec_.memory.max,
                                      .peak = peak,
                                      .serving_baseline = run_->serving_baseline,
                                      .host_ran_out = ended_as_the_host_ran_out(reason, *run_)});
}

void Worker::journal_exit(const ExitReason& reason, std::optional<uint64_t> peak) {
    Duration ran = run_->started_at
                       ? std::chrono::duration_cast<Duration>(ctx_.clock.now() - *run_->started_at)
                       : Duration(0);
    std::vector<std::pair<std::string, std::string>> fields = {
        {"PID", std::to_string(run_->pid)}, {"RUNTIME_MS", milliseconds_text(ran)}};
    reason.append_fields(fields);
    if (peak) fields.emplace_back("MEMORY_PEAK", std::to_string(*peak));
    emit(EventKind::exited, reason.describe() + " after " + format_duration(ran), fields);
    if (reason.oom_killed()) {
        fields.emplace_back("OOM_SCOPE", reason.oom_at_own_limit() ? "cgroup" : "host");
        emit(EventKind::oom_killed,
             reason.oom_at_own_limit()
                 ? "killed by the kernel OOM killer inside its cgroup at memory.max=" +
                       format_size(spec_.memory.max)
                 : "killed by a host-wide OOM kill below its memory.max=" +
                       format_size(spec_.memory.max) + " (the host ran out of memory)",
             fields);
    }
}

void Worker::empty_cgroup_then_finish(const ExitReason& reason) {
    // Whatever the main process left behind (double-forked children) goes too.
    auto populated = cgroup().populated();
    if (populated && *populated) (void)cgroup().kill();
    after_empty([this, reason] {
        if (auto r = cgroup().remove_tree(); !r)
            spdlog::warn("{}: {}", spec_.name, r.error().message());
        finish_run(reason);
    });
}

void Worker::after_empty(Done next, int polls) {
    auto populated = cgroup().populated();
    if (!populated || !*populated) return next();
    if (polls == 500)
        spdlog::warn("{}: cgroup still populated after kill; waiting (a process in D state?)",
                     spec_.name);
    if (polls % 50 == 49) (void)cgroup().kill();
    empty_timer_->arm(std::chrono::milliseconds(std::min(10 * (polls + 1), 200)),
                      [this, next = std::move(next), polls] { after_empty(next, polls + 1); });
}

void Worker::finish_run(const ExitReason& reason) {
    if (!spec_.credentials.empty())
        if (auto r = remove_credentials(ctx_.paths, spec_.name); !r)
            spdlog::warn("{}: {}", spec_.name, r.error().message());
    ollama_unload_.cancel();  // its answer is of no use to the next run
    // The run ends here; how it ended decides what follows.
    WorkerRun ended = std::move(*run_);
    run_.reset();
    last_exit_ = reason.describe();
    if (ended.stop_requested) {
        set_state(WorkerState::stopped, WorkerMove::end_run);
        emit(EventKind::stopped, "stopped (" + reason.describe() + ")");
        auto callbacks = std::move(on_stopped_);
        on_stopped_.clear();
        for (auto& cb : callbacks)
            if (cb) cb();
        // Unless a callback started it already.
        if (ended.restart_requested && !run_ && state_ == WorkerState::stopped) {
            tracker_.reset();
            launch();
        }
        return;
    }
    // A run a policy rule ended counts as a failure; its `then` may park the
    // worker or force a restart that the restart policy would not make.
    if (ended.policy_then == Then::park) {
        std::string rule =
            ended.policy_rule.empty() ? "a policy rule" : "rule '" + ended.policy_rule + "'";
        return park(reason, ended, ended.policy_rule,
                    rule + " ended the run (" + reason.describe() + ") with then: park");
    }
    // The host ran out with it again and again: restarting it would only
    // run the host out once more, at the cost of another model load. No rule
    // parked it (resume_when starts only what a rule's `then: park` parked),
    // so none is recorded; the last rule is in the journal.
    if (ended_as_the_host_ran_out(reason, ended) && host_kills_.record_kill())
        return park(
            reason, ended, "",
            HostKillGuard::verdict() + " (the last: " +
                (ended.policy_rule.empty() ? "" : "rule '" + ended.policy_rule + "', ") +
                reason.describe() + "), so it is not restarted into the same host",
            {{"HOST_KILLS", std::to_string(kHostKillsToPark)},
             {"LAST_RULE", ended.policy_rule},
             {"HOST_KILL_WINDOW_S",
              std::to_string(
                  std::chrono::duration_cast<std::chrono::seconds>(kHostKillWindow).count())}});
    RestartVerdict verdict =
        tracker_.on_exit(ended.killed_by_policy ? ExitClass::failure : reason.exit_class());
    if (ended.policy_then == Then::restart &&
        verdict.action == RestartVerdict::Action::stay_stopped)
        verdict = {RestartVerdict::Action::restart, spec_.restart.backoff_initial, 1};
    switch (verdict.action) {
        case RestartVerdict::Action::restart:
            return schedule_restart(verdict);
        case RestartVerdict::Action::stay_stopped:
            return set_state(WorkerState::stopped, WorkerMove::end_run);
        case RestartVerdict::Action::start_limit_hit:
            set_state(WorkerState::failed, WorkerMove::end_run);
            emit(EventKind::failed,
                 "start limit hit: " + std::to_string(spec_.restart.start_limit_burst) +
                     " starts within " + format_duration(spec_.restart.start_limit_interval) +
                     "; not restarting until started explicitly",
                 {{"START_LIMIT_BURST", std::to_string(spec_.restart.start_limit_burst)},
                  {"LAST_EXIT", reason.describe()}});
            return;
    }
}

void Worker::park(const ExitReason& reason, const WorkerRun& ended, const std::string& rule,
                  const std::string& why, std::vector<std::pair<std::string, std::string>> fields) {
    parked_checkpoint_ = ended.checkpoint_for_park;
    parked_rule_ = rule;
    set_state(WorkerState::parked, WorkerMove::end_run);
    fields.emplace_back("RULE", parked_rule_);
    fields.emplace_back("LAST_EXIT", reason.describe());
    std::string checkpointed;
    if (parked_checkpoint_) {
        fields.emplace_back("CHECKPOINT", parked_checkpoint_->path);
        checkpointed = " after checkpoint " + parked_checkpoint_->path +
                       " (checkpointed: its next start restores it)";
    }
    emit(EventKind::parked,
         "parked: " + why + checkpointed + "; not restarting until `infervisorctl start " +
             spec_.name + "`",
         std::move(fields));
}

void Worker::schedule_restart(const RestartVerdict& verdict) {
    set_state(WorkerState::backoff, WorkerMove::end_run);
    emit(EventKind::restarting,
         "restarting in " + format_duration(verdict.delay) + " (attempt " +
             std::to_string(verdict.attempt) + ")",
         {{"DELAY_MS", milliseconds_text(verdict.delay)},
          {"ATTEMPT", std::to_string(verdict.attempt)}});
    room_wait_logged_ = false;
    restart_timer_->arm(verdict.delay, [this] {
        if (state_ == WorkerState::backoff) launch_when_room();
    });
}

void Worker::launch_when_room() {
    if (!room_needed_) return launch_when_gpu_room();
    RoomVerdict room =
        judge_room(*room_needed_, read_meminfo(ctx_.paths.procfs).value_or(MemInfo{}));
    if (room.fits) {
        if (room_wait_logged_)
            spdlog::info("{}: the host has room again ({} available); restarting", spec_.name,
                         human_size(room.available.value_or(0)));
        return launch_when_gpu_room();
    }
    if (!room_wait_logged_) {
        room_wait_logged_ = true;
        emit(EventKind::restart_waiting_for_memory,
             "restart waits for memory: the last run ended for memory and the host has " +
                 human_size(room.available.value_or(0)) + " available, less than the " +
                 human_size(room.wanted_available) + " it needs (" + human_size(room.needed) +
                 " for the worker + 10% of RAM in reserve)",
             {{"NEEDED_BYTES", std::to_string(room.needed)},
              {"WANTED_AVAILABLE_BYTES", std::to_string(room.wanted_available)},
              {"HOST_MEM_AVAILABLE_BYTES", std::to_string(room.available.value_or(0))}});
    }
    restart_timer_->arm(kRoomPoll, [this] {
        if (state_ == WorkerState::backoff) launch_when_room();
    });
}

// After a run a rule on GPU memory ended: the restart waits, re-reading
// every kRoomPoll, until the devices it held memory on have room for what
// it held (judge_gpu_room), or while one of them is in error. Without a GPU
// reading there is nothing to judge by, and it goes ahead.
void Worker::launch_when_gpu_room() {
    if (!gpu_room_needed_ || !ctx_.gpu_devices) return launch();
    auto host = ctx_.gpu_devices();
    GpuRoomVerdict room = host ? judge_gpu_room(*gpu_room_needed_, *host) : GpuRoomVerdict{};
    if (room.fits) {
        if (gpu_room_wait_logged_)
            spdlog::info("{}: its GPUs have room again ({} free); restarting", spec_.name,
                         human_size(room.available));
        gpu_room_wait_logged_ = false;
        return launch();
    }
    if (!gpu_room_wait_logged_) {
        gpu_room_wait_logged_ = true;
        std::string devices;
        for (const auto& d : gpu_room_needed_->devices) devices += (devices.empty() ? "" : ",") + d;
        emit(EventKind::restart_waiting_for_memory,
             "restart waits for GPU memory: the last run ended for GPU memory and " + room.why,
             {{"GPU_NEEDED_BYTES", std::to_string(room.needed)},
              {"GPU_AVAILABLE_BYTES", std::to_string(room.available)},
              {"GPU_DEVICES", devices}});
    }
    restart_timer_->arm(kRoomPoll, [this] {
        if (state_ == WorkerState::backoff) launch_when_gpu_room();
    });
}

}  // namespace infervisor
