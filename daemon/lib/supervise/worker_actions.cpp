// Worker: what policy rules and operators do to a running worker beyond
// its start and stop: throttle, freeze, a kill or stop by a rule (with what
// follows it), checkpoints, suspension and resume; admission of a start
// (memory.reserve); and why a worker is in its state, for status displays.
#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>

#include "base/file_io.h"
#include "base/units.h"
#include "cgroup/cgroup_limits.h"
#include "cgroup/cgroup_stats.h"
#include "policy/stat_files.h"
#include "process/pidfd.h"
#include "supervise/worker.h"
#include "supervise/worker_credentials.h"

namespace infervisor {

namespace {}  // namespace

Result<void> Worker::throttle(uint64_t memory_high) {
    if (main_pid() == 0) return plain_error("not running");
    return write_memory_limit(cgroup(), MemoryLimit::high, memory_high);
}

Result<void> Worker::freeze() {
    if (main_pid() == 0) return plain_error("not running");
    return cgroup().set_frozen(true);
}

Result<void> Worker::kill_by_policy(Then then, std::string rule) {
    if (!live() || state_ == WorkerState::stopping) return plain_error("not running");
    run_->killed_by_policy = true;
    run_->policy_then = then;
    run_->policy_rule = std::move(rule);
    auto r = cgroup().kill();
    // Free the memory now rather than when the dying process gets scheduled:
    // the host may be short of it.
    if (r && run_->pidfd) release_memory_in_background(run_->pidfd->native_handle());
    return r;
}

Result<void> Worker::stop_by_policy(Then then, std::string rule) {
    if (!live() || state_ == WorkerState::stopping) return plain_error("not running");
    run_->killed_by_policy = true;
    run_->policy_then = then;
    run_->policy_rule = std::move(rule);
    begin_stop();
    return {};
}

Result<void> Worker::checkpoint_by_policy(Then then, std::string rule) {
    if (!live() || state_ == WorkerState::stopping) return plain_error("not running");
    if (state_ == WorkerState::suspended) return plain_error("suspended; resume it first");
    std::string trigger = "rule '" + rule + "'";
    if (then == Then::keep_running)
        return checkpoints_.request(trigger, "the worker keeps running", {});
    auto after = [this, then, rule](const WorkerCheckpoints::Outcome& o) {
        stop_after_checkpoint(then, rule, o);
    };
    return checkpoints_.request(trigger, "killing the worker", after, true, true);
}

// Written (or not usable): a clean stop. No answer in time: a kill.
void Worker::stop_after_checkpoint(Then then, const std::string& rule,
                                   const WorkerCheckpoints::Outcome& outcome) {
    if (!live() || state_ == WorkerState::stopping) return;  // ended meanwhile
    if (then == Then::park && outcome.published)
        run_->checkpoint_for_park =
            ParkedCheckpoint{outcome.detail, outcome.bytes, ctx_.clock.now()};
    if (outcome.timed_out || outcome.kill)
        (void)kill_by_policy(then, rule);
    else
        (void)stop_by_policy(then, rule);
}

void Worker::drain_stop(std::function<void(const std::string& how)> done) {
    if (!run_ && state_ != WorkerState::backoff && state_ != WorkerState::waiting)
        return done("was not running");
    bool checkpoints_work = spec_.checkpoint.method != CheckpointMethod::cooperative ||
                            checkpoints_.last_answer_took() ||
                            spec_.checkpoint.interval > Duration::zero();
    if (checkpoints_work) return checkpoint_then_stop("infervisorctl drain", std::move(done));
    stop([done] { done("stopped"); });
}

void Worker::stop_saving_slots(const std::string& trigger, Done done,
                               std::optional<Duration> bound) {
    if (spec_.checkpoint.method != CheckpointMethod::llama_server) return stop(std::move(done));
    checkpoint_then_stop(
        trigger,
        [done](const std::string&) {
            if (done) done();
        },
        bound);
}

void Worker::checkpoint_then_stop(const std::string& trigger,
                                  std::function<void(const std::string& how)> done,
                                  std::optional<Duration> bound) {
    if (live() && state_ == WorkerState::running) {
        auto then_stop = [this, done](const WorkerCheckpoints::Outcome& o) {
            std::string how = o.published ? "checkpointed, then stopped"
                                          : "stopped (its checkpoint failed: " + o.detail + ")";
            stop([done, how] { done(how); });
        };
        if (checkpoints_.request(trigger, "stopping the worker", then_stop, true, true, bound))
            return;
    }
    stop([done] { done("stopped"); });
}

Result<void> Worker::checkpoint_now(WorkerCheckpoints::Finished finished) {
    if (!live() || state_ == WorkerState::stopping) return plain_error("not running");
    if (state_ == WorkerState::suspended) return plain_error("suspended; resume it first");
    return checkpoints_.request("infervisorctl", "the worker keeps running", std::move(finished));
}

Result<std::vector<StoredCheckpoint>> Worker::delete_checkpoints(
    const std::vector<std::string>& ids, bool all, uid_t caller_uid) {
    auto deleted = checkpoints_.remove(ids, all, caller_uid);
    if (!deleted || !parked_checkpoint_) return deleted;
    for (const auto& c : *deleted)
        if (c.path.string() == parked_checkpoint_->path) {
            parked_checkpoint_.reset();
            persist();
            break;
        }
    return deleted;
}

Result<void> Worker::suspend(std::string trigger, WorkerSuspension::Finished finished,
                             bool for_memory) {
    if (state_ == WorkerState::suspended) return plain_error("already suspended");
    if (!live() || (state_ != WorkerState::running && state_ != WorkerState::starting))
        return plain_error("not running");
    // Persisted again once reclaimed: what it will want back, for a daemon
    // that adopts it suspended.
    auto reclaimed = [this, finished = std::move(finished)](const WorkerSuspension::Outcome& o) {
        if (state_ == WorkerState::suspended) persist();
        if (finished) finished(o);
    };
    auto step = suspend_engine_step();
    if (step.before && step.name == kGpuReleaseStep) {
        uint64_t held = step.held_bytes.value_or(0);
        run_->gpu_released = GpuRoomNeeded{held, run_->gpu_devices};
        CgroupStats stats(cgroup());
        if (for_memory)
            step.skipped = "for memory: it would move its " + human_size(held) +
                           " of GPU memory into host memory, charged to the worker";
        else
            step.skipped = gpu_release_refusal(
                held, read_meminfo(ctx_.paths.procfs).value_or(MemInfo{}),
                value_or_empty(stats.memory_max()), value_or_empty(stats.memory_current()));
    } else if (for_memory && step.before && spec_.suspend.level == 1) {
        step.skipped =
            "for memory: level 1 would move the weights into host memory, pinned and charged to "
            "the worker";
    }
    if (auto r = suspension_.suspend(cgroup(), std::move(trigger), std::move(reclaimed),
                                     std::move(step));
        !r)
        return r;
    run_->resume_to = state_;
    set_state(WorkerState::suspended, WorkerMove::suspend);
    // A frozen worker sends no WATCHDOG=1 and no READY=1 and answers no
    // probe: not its fault.
    watchdog_timer_->cancel();
    start_timer_->cancel();
    if (probes_) probes_->run_ended();
    return {};
}

Result<std::string> Worker::engine_bearer() const {
    if (!spec_.engine || spec_.engine->api_key.empty()) return std::string();
    auto it = spec_.credentials.find(spec_.engine->api_key);
    if (it == spec_.credentials.end())
        return plain_error("no credential '" + spec_.engine->api_key + "' for engine.api_key");
    return read_credential_secret(it->second);
}

std::optional<Duration> Worker::unload_bound() const {
    if (!spec_.engine || spec_.engine->kind != EngineKind::ollama) return std::nullopt;
    return spec_.engine->timeout + kOllamaUnloadWait;
}

Result<void> Worker::unload_models(std::string trigger, UnloadFinished finished) {
    auto bound = unload_bound();
    if (!bound) return plain_error("its server does not unload models (engine.kind is not ollama)");
    if (!live() || (state_ != WorkerState::running && state_ != WorkerState::starting))
        return plain_error("not running");
    auto bearer = engine_bearer();
    if (!bearer) return bearer.error();
    auto before = value_or_empty(CgroupStats(cgroup()).memory_current());
    // finish_run() cancels the unload: the callback sees the same run.
    ollama_unload_.unload(
        {*spec_.engine, std::move(*bearer), *bound},
        [this, before, trigger = std::move(trigger),
         finished = std::move(finished)](Result<WorkerOllamaUnload::Outcome> outcome) {
            auto after = value_or_empty(CgroupStats(cgroup()).memory_current());
            auto [freed, what] = journal_unload(trigger, outcome, before, after);
            if (finished) finished(freed, what);
        });
    return {};
}

namespace {

std::string model_list(const std::vector<OllamaModel>& models) {
    std::string out;
    for (const OllamaModel& m : models) {
        if (!out.empty()) out += ", ";
        out += m.name;
        if (m.size) out += " (" + human_size(*m.size) + ")";
    }
    return out;
}

std::string names_only(const std::vector<OllamaModel>& models) {
    std::string out;
    for (const OllamaModel& m : models) out += (out.empty() ? "" : ",") + m.name;
    return out;
}

// A step that cannot begin (a key or identity that cannot be read) fails,
// answered from the loop: a step's callback never runs within its call.
auto refuse_step(boost::asio::io_context& io) {
    return [&io](Error error, std::function<void(Result<void>)> done) {
        boost::asio::post(io, [error, done = std::move(done)] { done(error); });
    };
}

}  // namespace

std::pair<bool, std::string> Worker::journal_unload(
    const std::string& trigger, const Result<WorkerOllamaUnload::Outcome>& outcome,
    std::optional<uint64_t> before, std::optional<uint64_t> after) {
    std::vector<std::pair<std::string, std::string>> fields = {{"TRIGGER", trigger}};
    if (before) fields.emplace_back("MEMORY_BEFORE_UNLOAD", std::to_string(*before));
    if (after) fields.emplace_back("MEMORY_AFTER_UNLOAD", std::to_string(*after));
    std::string memory =
        before && after ? "; memory.current " + human_size(*before) + " -> " + human_size(*after)
                        : "";
    std::string what;
    bool freed = false;
    if (!outcome) {
        what = "the unload failed: " + outcome.error().message();
        fields.emplace_back("UNLOAD", "failed");
        fields.emplace_back("UNLOAD_ERROR", outcome.error().message());
    } else if (outcome->nothing_loaded()) {
        what = "no model was loaded: nothing to unload";
        fields.emplace_back("UNLOAD", "nothing-loaded");
    } else {
        freed = outcome->still_loaded.empty();
        fields.emplace_back("UNLOAD", freed ? "done" : "still-loaded");
        if (!outcome->unloaded.empty()) {
            what = "unloaded " + model_list(outcome->unloaded);
            fields.emplace_back("MODELS_UNLOADED", names_only(outcome->unloaded));
        }
        if (!outcome->still_loaded.empty()) {
            what += std::string(what.empty() ? "" : "; ") + "still loaded after " +
                    format_duration(*unload_bound()) +
                    " (busy with a request): " + model_list(outcome->still_loaded);
            fields.emplace_back("MODELS_STILL_LOADED", names_only(outcome->still_loaded));
        }
    }
    emit(EventKind::models_unloaded, what + memory + " (" + trigger + ")", std::move(fields));
    return {freed, what};
}

// `suspend: {method: vllm-sleep}`: the engine's sleep before the freeze and
// its wake after the thaw (WorkerVllmSleep, bounded by engine.timeout); an
// empty step for a plain freeze. The api_key credential is read at each
// request (a rotated key is used at once).
WorkerSuspension::EngineStep Worker::suspend_engine_step(std::string_view adopted_step) {
    if (adopted_step == kGpuReleaseStep) return gpu_release_step(std::nullopt);
    bool vllm = adopted_step.empty()
                    ? spec_.suspend.method == SuspendMethod::vllm_sleep
                    : adopted_step == suspend_method_name(SuspendMethod::vllm_sleep);
    if (!vllm) {
        // Adopted with no step, or a plain freeze now: no GPU release
        // unless it holds NVIDIA GPU memory.
        if (!adopted_step.empty() || spec_.suspend.method != SuspendMethod::freeze ||
            !spec_.suspend.release_gpu || !ctx_.nvidia_memory_of)
            return {};
        auto held = ctx_.nvidia_memory_of(cgroup_in_mount());
        if (!held || *held == 0) return {};
        return gpu_release_step(held);
    }
    if (!spec_.engine) return {};
    auto server = [this]() -> Result<WorkerVllmSleep::Server> {
        auto bearer = engine_bearer();
        if (!bearer) return bearer.error();
        return WorkerVllmSleep::Server{*spec_.engine, std::move(*bearer), spec_.engine->timeout};
    };
    // A key that cannot be read fails the step, answered from the loop.
    auto refuse = refuse_step(ctx_.io);
    WorkerSuspension::EngineStep step;
    step.name = suspend_method_name(SuspendMethod::vllm_sleep);
    step.before = [this, server, refuse](std::function<void(Result<void>)> done) {
        auto s = server();
        if (!s) return refuse(s.error(), std::move(done));
        vllm_sleep_.sleep(std::move(*s), spec_.suspend.level, std::move(done));
    };
    step.after = [this, server, refuse](std::function<void(Result<void>)> done) {
        auto s = server();
        if (!s) return refuse(s.error(), std::move(done));
        vllm_sleep_.wake(std::move(*s), std::move(done));
    };
    step.cancel = [this] { vllm_sleep_.cancel(); };
    return step;
}

std::string Worker::why_suspension_keeps_gpu() const {
    if (spec_.suspend.method == SuspendMethod::vllm_sleep)
        return spec_.engine ? "" : "suspend.method is vllm-sleep, but it has no engine to ask";
    if (!spec_.suspend.release_gpu) return "suspend.gpu is keep";
    auto held =
        ctx_.nvidia_memory_of && live() ? ctx_.nvidia_memory_of(cgroup_in_mount()) : std::nullopt;
    if (!held || *held == 0)
        return "it holds no NVIDIA GPU memory at the last reading (only NVIDIA's driver moves "
               "GPU memory out)";
    return "";
}

// `suspend: {gpu: release}`: the CUDA processes' GPU memory moved into
// their host memory before the freeze and back after the thaw, each by the
// cuda-checkpoint helper as the worker's user (WorkerGpuRelease). The
// helper is given every process of the cgroup and picks the CUDA ones.
WorkerSuspension::EngineStep Worker::gpu_release_step(std::optional<uint64_t> held) {
    auto request = [this]() -> Result<WorkerGpuRelease::Request> {
        auto who = resolve_identity(spec_, ctx_.paths);
        if (!who) return who.error();
        auto pids = cgroup().procs_up_to(kMaxCudaProcesses);
        if (pids.empty()) return plain_error("no process left in its cgroup");
        return WorkerGpuRelease::Request{ctx_.paths.helper_program,
                                         ctx_.paths.cuda_library,
                                         std::move(pids),
                                         {who->uid, who->gid, who->supplementary_groups}};
    };
    auto refuse = refuse_step(ctx_.io);
    // The helper's answer: its detail is the error when it says not done.
    auto answered = [](std::function<void(Result<void>)> done) {
        return [done = std::move(done)](Result<CudaCheckpointAnswer> answer) {
            if (!answer) return done(answer.error());
            if (!answer->ok) return done(plain_error(answer->detail));
            done({});
        };
    };
    WorkerSuspension::EngineStep step;
    step.name = kGpuReleaseStep;
    step.held_bytes = held;
    step.before_field = "GPU_RELEASE";
    step.after_field = "GPU_RESTORE";
    step.memory_field = "MEMORY_BEFORE_GPU_RELEASE";
    step.done_words =
        (held ? human_size(*held) + " of GPU memory" : std::string("its GPU memory")) +
        " moved to host memory, the GPU freed";
    step.after_failed = "its GPU memory was not restored";
    step.after_failed_then =
        "its CUDA calls wait until it is (infervisorctl suspend and then resume it again once its "
        "GPU has room, or restart it)";
    if (held) step.fields.emplace_back("GPU_MEMORY_BYTES", std::to_string(*held));
    step.before = [this, request, refuse, answered](std::function<void(Result<void>)> done) {
        auto r = request();
        if (!r) return refuse(r.error(), std::move(done));
        gpu_release_.release(std::move(*r), answered(std::move(done)));
    };
    step.after = [this, request, refuse, answered](std::function<void(Result<void>)> done) {
        auto r = request();
        if (!r) return refuse(r.error(), std::move(done));
        gpu_release_.restore(std::move(*r), answered(std::move(done)));
    };
    step.cancel = [this] { gpu_release_.cancel(); };
    return step;
}

Result<void> Worker::resume(std::string trigger, WorkerSuspension::Finished finished) {
    if (state_ != WorkerState::suspended) return plain_error("not suspended");
    if (GpuRoomVerdict room = gpu_room_to_resume(); !room.fits)
        return plain_error("its GPU memory cannot go back yet: " + room.why +
                           "; resume it once its cards have room");
    return suspension_.resume(std::move(trigger), std::move(finished));
}

GpuRoomVerdict Worker::gpu_room_to_resume() const {
    if (state_ != WorkerState::suspended || !run_ || !run_->gpu_released ||
        run_->gpu_released->bytes == 0 || !ctx_.gpu_devices ||
        suspension_.step_name() != kGpuReleaseStep || suspension_.engine_asleep() != true)
        return {};
    auto host = ctx_.gpu_devices();
    return host ? judge_gpu_room(*run_->gpu_released, *host) : GpuRoomVerdict{};
}

void Worker::on_thawed() {
    if (state_ != WorkerState::suspended || !run_) return;
    set_state(run_->resume_to, WorkerMove::thaw);
    // The heartbeat is judged from now: the time frozen was not its silence.
    if (run_->last_heartbeat) run_->last_heartbeat = ctx_.clock.now();
    arm_watchdog();
    arm_start_timeout();
    // Probes start afresh: the gate again while loading, else readiness
    // and liveness (their thresholds absorb the paging-in after a resume).
    if (probes_) {
        probes_->run_started(run_->launched);  // the gate again (an adopted run's first start)
        if (state_ == WorkerState::running) probes_->loading_over();
    }
}

// memory.reserve (policy/admission.h): a start that does not fit waits in
// state `waiting` (the Supervisor's AdmissionQueue starts it again when
// there is room); it does not count as a start.
bool Worker::admitted() {
    if (!spec_.memory.reserve || !ctx_.admission) return true;
    AdmissionVerdict v = ctx_.admission(spec_);
    auto fields = v.measurements;
    if (waiting_since_) {
        auto waited = std::chrono::duration_cast<Duration>(ctx_.clock.now() - *waiting_since_);
        fields.emplace_back("WAITED_MS", std::to_string(waited.count()));
    }
    if (!v.fits && spec_.overcommit) {
        fields.emplace_back("OVERCOMMIT", "1");
        emit(EventKind::admitted,
             "starts although it does not fit (admission: overcommit): " + v.reason,
             std::move(fields));
    } else if (v.fits && state_ == WorkerState::waiting) {
        emit(EventKind::admitted, "admitted: " + v.reason, std::move(fields));
    }
    if (v.fits || spec_.overcommit) {
        waiting_since_.reset();
        return true;
    }
    waiting_reason_ = v.reason;
    if (state_ != WorkerState::waiting) {
        waiting_since_ = ctx_.clock.now();
        set_state(WorkerState::waiting, WorkerMove::wait_for_room);
        emit(EventKind::waiting, "waiting instead of starting: " + v.reason, std::move(fields));
    }
    return false;
}

std::string Worker::state_reason() const {
    switch (state_) {
        case WorkerState::waiting:
            return waiting_reason_;
        case WorkerState::suspended:
            return suspension_.trigger();
        case WorkerState::parked:
            return parked_reason();
        case WorkerState::failed:
            return "start limit hit: " + std::to_string(spec_.restart.start_limit_burst) +
                   " starts within " + format_duration(spec_.restart.start_limit_interval) +
                   (last_exit_.empty() ? "" : "; the last: " + last_exit_);
        case WorkerState::backoff:
            if (lock_waits_ > 0) return "its start waits for a lock on a worker dir";
            return last_exit_.empty() ? "" : "restarts after: " + last_exit_;
        case WorkerState::starting: {
            std::string reason = "waiting for " + awaited_signal();
            if (spec_.notify && rejected_notify_ > 0)
                reason += "; " + std::to_string(rejected_notify_) +
                          " notify message(s) dropped, the last: " + last_rejected_notify_;
            return reason;
        }
        default:
            return "";
    }
}

std::string Worker::parked_reason() const {
    if (parked_rule_.empty()) return host_kills_.tripped() ? HostKillGuard::verdict() : "";
    std::string reason = "rule '" + parked_rule_ + "'";
    if (const auto& c = parked_checkpoint_) {
        Duration age = std::chrono::floor<std::chrono::seconds>(ctx_.clock.now() - c->written_at);
        reason += "; checkpoint" + (c->bytes ? " of " + human_size(*c->bytes) : std::string()) +
                  " written " + format_duration(std::max(age, Duration(0))) + " ago";
    }
    return reason;
}

}  // namespace infervisor
