// Worker: one supervised worker — its process, its cgroup, its notify socket,
// and the state machine that starts, watches, stops and restarts it.
//
// Contract: all methods run on the event loop thread; none blocks. A run:
//   start → cgroup created with limits → process born inside it → (loading:
//   READY=1 and/or the startup, else readiness, probe's first pass; neither
//   within start_timeout is a failed start: cgroup killed) → exit (pidfd
//   readable) → remaining processes killed → cgroup empty (cgroup.events
//   populated 0) → cgroup removed → restart by policy, or not.
// stop(): stop signal to the main process, stop timeout, then cgroup.kill;
// the callback runs once the cgroup is gone. A Worker must be stopped before
// it is destroyed (the Supervisor does so).
#pragma once

#include <boost/asio/posix/stream_descriptor.hpp>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/timer.h"
#include "gpu/gpu_assignment.h"
#include "notify/notify_socket.h"
#include "policy/rule_spec.h"
#include "policy/samples.h"
#include "process/spawn_request.h"
#include "supervise/exit_reason.h"
#include "supervise/host_kill_guard.h"
#include "supervise/persisted_worker.h"
#include "supervise/restart_room.h"
#include "supervise/restart_tracker.h"
#include "supervise/worker_checkpoints.h"
#include "supervise/worker_context.h"
#include "supervise/worker_gpu_release.h"
#include "supervise/worker_launch.h"
#include "supervise/worker_ollama_unload.h"
#include "supervise/worker_probes.h"
#include "supervise/worker_run.h"
#include "supervise/worker_state.h"
#include "supervise/worker_suspension.h"
#include "supervise/worker_vllm_sleep.h"

namespace infervisor {

class Worker {
  public:
    using Done = std::function<void()>;

    Worker(WorkerContext& ctx, WorkerSpec spec);
    ~Worker();
    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;

    const WorkerSpec& spec() const { return spec_; }
    const std::string& name() const { return spec_.name; }
    WorkerState state() const { return state_; }
    // When it entered state(): set_state(); the construction (or adoption)
    // before that.
    TimePoint state_since() const { return state_since_; }
    const CgroupDir& cgroup() const { return cgroup_; }
    // cgroup().path_in_mount(): as /proc/PID/cgroup names it.
    const std::string& cgroup_in_mount() const { return cgroup_in_mount_; }

    // Starts unless already up; from `failed` an explicit start clears the
    // start limit (an operator asked).
    void start();
    // Stops; `done` runs when the worker is down and its cgroup removed.
    void stop(Done done = {});
    // Stops, then starts again.
    void restart();
    // For a drain (Supervisor::drain): the gentlest way down by the worker's
    // own method. Checkpointed first when its checkpoints are known to work
    // here (method criu or llama-server, or a cooperative one that has
    // answered a checkpoint since the daemon started, or a periodic
    // interval), and running (not suspended); then stopped as stop() does.
    // `done(how)` once it is down: "checkpointed, then stopped", "stopped
    // (its checkpoint failed: ...)", "stopped", or "was not running".
    void drain_stop(std::function<void(const std::string& how)> done);
    // For the daemon's own stops (a reload that changes the worker, the
    // daemon's stop): a llama-server worker (checkpoint.method
    // llama-server) that is running has its slots saved first, `trigger`
    // naming why, bounded by checkpoint.timeout and `bound` (the daemon's
    // stop has systemd's TimeoutStopSec), then is stopped as stop() does.
    // Only that method: its save is quick and its restore refuses another
    // model or build; a criu image or a cooperative worker's state could
    // bring back what a changed configuration replaced.
    void stop_saving_slots(const std::string& trigger, Done done,
                           std::optional<Duration> bound = std::nullopt);
    // Sends `sig` to every process of the worker (SIGKILL: cgroup.kill).
    Result<void> kill(int sig);

    // Policy actions (PolicyRunner). `then` decides what follows the end of
    // the run: the restart policy, a restart regardless of it, or `parked`
    // (with a `parked` event naming `rule`).
    Result<void> throttle(uint64_t memory_high);
    Result<void> freeze();
    // cgroup.kill, then process_mrelease of the main process.
    Result<void> kill_by_policy(Then then, std::string rule = {});
    // A clean stop (stop signal, timeout, cgroup.kill); `then` as above.
    Result<void> stop_by_policy(Then then, std::string rule = {});
    // The checkpoint signal, then up to checkpoint.timeout for CHECKPOINT=1;
    // then a clean stop (stop_by_policy), or nothing with Then::keep_running.
    // No answer in time: kill_by_policy (with keep_running: only journaled).
    Result<void> checkpoint_by_policy(Then then, std::string rule = {});
    // A checkpoint by hand: the worker keeps running. `finished` as for
    // WorkerCheckpoints::request (not called when this fails).
    Result<void> checkpoint_now(WorkerCheckpoints::Finished finished = {});
    // Deletes published checkpoints on an operator's request
    // (WorkerCheckpoints::remove); a parked worker whose checkpoint goes is
    // parked without one (it starts fresh).
    Result<std::vector<StoredCheckpoint>> delete_checkpoints(const std::vector<std::string>& ids,
                                                             bool all, uid_t caller_uid);
    // The policy action about to end this run acts for memory (a host rule,
    // a rule on a memory or swap metric): its restart waits until the host
    // has room for the worker again (restart_room.h). A host rule ended it
    // with the host out of memory at the worker's present size: its restart
    // waits for room for its peak (`host_ran_out`), not only for what it
    // took when it began serving. Call before the kill.
    void expect_memory_room(bool host_ran_out) {
        if (!run_) return;
        run_->ended_for_memory = true;
        run_->host_ran_out = host_ran_out;
    }

    // The policy action about to end this run acts for GPU memory (a rule
    // on gpu.* or host.gpu.*): its restart waits until the devices it held
    // memory on have room for what it held (restart_room.h
    // judge_gpu_room). Call before the kill.
    void expect_gpu_room() {
        if (run_) run_->ended_for_gpu = true;
    }

    // Adoption (adoption.h): takes over the run an earlier daemon started.
    // `pidfd` names its main process, which the caller found alive with the
    // persisted pid, start time and cgroup. The notify socket is bound again
    // at the same path (the worker keeps NOTIFY_SOCKET), the work dir locks
    // are taken again, the heartbeat deadline counts from now and a run not
    // yet ready gets what is left of its start_timeout. A suspended run
    // stays frozen and suspended, by whom it was (its watchdog, probes and
    // start timeout wait for its resume). Emits `adopted`. A stop, restart
    // or policy stop that was under way is carried on.
    void adopt(const PersistedWorker& persisted, UniqueFd pidfd);
    // The persisted run's main process exited while no daemon watched: the
    // exit is journaled (status unknown), what is left in the cgroup is
    // killed, and the restart policy applies — unless `restart_policy` is
    // false (the worker is no longer configured): then it ends stopped.
    void adopt_exited(const PersistedWorker& persisted, bool restart_policy);
    // A worker that had no run: its state (stopped, failed, parked) and
    // counters carry over; one waiting in backoff starts now.
    void restore(const PersistedWorker& persisted);
    // The configuration snapshot the spec came from (config_snapshot.h).
    void set_config_snapshot(std::string id);
    // What goes to <runtime_dir>/state/NAME on every state change.
    PersistedWorker persisted() const;
    // Suspends a starting or running worker (worker_suspension.h): frozen,
    // its memory pushed out, state `suspended` until resume(); the watchdog
    // and start timeout pause meanwhile. `trigger` says who asked ("rule
    // 'x'", "infervisorctl"). `finished` as for WorkerSuspension.
    // `for_memory`: a rule acting for memory asks (PolicyRunner): a
    // vllm-sleep of level 1 is then not asked for, since it moves the
    // weights into host memory (pinned, which no reclaim can push out),
    // charged to the worker: more of what runs short; nor is the GPU
    // release, for the same reason. The GPU release is also not asked for
    // when the copy would not fit (gpu_release_refusal).
    Result<void> suspend(std::string trigger, WorkerSuspension::Finished finished = {},
                         bool for_memory = false);
    // Thaws a suspended worker back to the state it was suspended in. Refused
    // while the GPU memory its suspension released has no room to go back
    // to (gpu_room_to_resume()): a restore onto a full card fails and leaves
    // the worker's CUDA calls waiting.
    Result<void> resume(std::string trigger, WorkerSuspension::Finished finished = {});
    // Whether the cards it held memory on have room for what its GPU
    // release moved out (judge_gpu_room, at the last GPU reading); fits
    // when it released none, without a reading, and for a suspension
    // adopted from an earlier daemon (which did not say where it was held).
    GpuRoomVerdict gpu_room_to_resume() const;
    // The step around a suspension's freeze (spec_.suspend): vllm-sleep's;
    // the GPU release (`gpu: release`) when the last GPU reading has the
    // worker holding NVIDIA GPU memory; or none. Adopting a suspension, the
    // step the earlier image took (PersistedWorker::suspended_step) is the
    // one, whatever the configuration says now: its resume must undo it.
    WorkerSuspension::EngineStep suspend_engine_step(std::string_view adopted_step = {});
    // Why a suspension now would leave its GPU memory on the card ("suspend.gpu
    // is keep"); "" when it would give it back: vllm-sleep (the server drops
    // its weights and KV cache from the GPU), or the GPU release of a worker
    // holding NVIDIA memory (for the preempt ladder of host GPU rules).
    std::string why_suspension_keeps_gpu() const;
    // The preempt ladder's unload (policy/preempt_ladder.h): the worker's
    // Ollama server (engine.kind ollama) unloads every model it holds and
    // keeps running (WorkerOllamaUnload, bounded by unload_bound()). Journals
    // models-unloaded: what was unloaded, what is still loaded, memory.current
    // before and after. `finished` (on the loop, at most once, not after the
    // run ends) gets whether the unload freed memory: no when nothing was
    // loaded, a model is still loaded at the bound, or the server failed —
    // the ladder then goes on at once. An error: not running, or not Ollama.
    using UnloadFinished = std::function<void(bool freed, const std::string& what)>;
    Result<void> unload_models(std::string trigger, UnloadFinished finished);
    // How long an unload may take: engine.timeout for the requests, plus
    // kOllamaUnloadWait for the models to leave. Empty when the worker's
    // server does not unload.
    std::optional<Duration> unload_bound() const;
    static constexpr Duration kOllamaUnloadWait = std::chrono::seconds(5);
    // Why the worker is in its state, for status displays: who suspended it,
    // which rule parked it (and, checkpointed, the checkpoint's size and
    // age), what it waits for (room; READY=1 or its gate probe, and the
    // notify messages dropped), why it failed or restarts (the last run's
    // end); "" when there is nothing to say.
    std::string state_reason() const;
    // Parked after the checkpoint its rule asked for (action: checkpoint,
    // then: park): that checkpoint, which its next start restores; the
    // worker shows as `checkpointed` (worker_state.h).
    const std::optional<ParkedCheckpoint>& parked_checkpoint() const { return parked_checkpoint_; }
    std::string_view shown_state() const {
        return shown_state_name(state_, parked_checkpoint_.has_value());
    }
    // The rule that is stopping this run, or that parked the worker; empty:
    // none.
    const std::string& policy_rule() const { return run_ ? run_->policy_rule : parked_rule_; }
    // The suspension's side (since when, what memory it will want back).
    const WorkerSuspension& suspension() const { return suspension_; }
    const WorkerCheckpoints& checkpoints() const { return checkpoints_; }

    std::optional<TimePoint> started_at() const { return run_ ? run_->started_at : std::nullopt; }
    // When this run became `running` (ready): at exec for a worker with
    // neither notify nor a probe, at READY=1 for a notify worker, when its
    // startup/readiness probe first passed for a probe worker. Empty while
    // the run is still `starting` (loading) and between runs. Set by
    // set_state() on the first move to `running` of a run, so every path
    // that makes a worker ready records it.
    std::optional<TimePoint> ready_at() const { return run_ ? run_->ready_at : std::nullopt; }
    // This run was held in `starting` until the worker signalled readiness
    // (READY=1, a passing probe): ready_at() marks the end of its loading.
    // False for a worker that is `running` from exec on; then ready_at() is
    // only its start, and the policy engine decides when loading ended.
    bool signals_readiness() const { return run_ && run_->signals_readiness; }
    // The policy engine's phase of this run ("loading", "serving"; empty
    // until first evaluated), for status displays. Set by PolicyRunner.
    const std::string& phase() const {
        static const std::string none;
        return run_ ? run_->phase : none;
    }
    // `baseline`: memory.current when the run began serving, if it has; a
    // restart after a kill for memory waits for room for that much.
    void set_phase(std::string phase, std::optional<uint64_t> baseline) {
        if (!run_) return;
        run_->phase = std::move(phase);
        run_->serving_baseline = baseline;
    }
    // Its GPU use at the policy's last sample (GpuWatch), for status
    // displays. Set by PolicyRunner; empty until then and where the host's
    // GPUs are not read.
    void set_gpu_use(std::optional<uint64_t> memory, std::optional<double> utilization,
                     const std::vector<WorkerGpuDeviceUse>& devices = {}) {
        if (!run_) return;
        run_->gpu_memory = memory;
        run_->gpu_utilization = utilization;
        run_->gpu_cards.clear();
        if (!memory) return;
        run_->gpu_devices.clear();
        for (const auto& d : devices) {
            run_->gpu_devices.push_back(d.pci_bus_id);
            run_->gpu_cards.push_back({d.pci_bus_id, d.memory});
        }
    }
    std::optional<uint64_t> gpu_memory() const { return run_ ? run_->gpu_memory : std::nullopt; }
    std::vector<GpuCardUse> gpu_cards() const {
        return run_ ? run_->gpu_cards : std::vector<GpuCardUse>{};
    }
    std::optional<double> gpu_utilization() const {
        return run_ ? run_->gpu_utilization : std::nullopt;
    }
    // The main process has exited and the run is being wound up.
    bool exiting() const { return run_ && run_->stage == WorkerRun::Stage::exiting; }
    // The main process, while the run has one; 0 otherwise.
    pid_t main_pid() const { return run_ ? run_->pid : 0; }
    // Restarts so far, and how the last run ended (ExitReason::describe()).
    size_t restarts() const { return tracker_.total_restarts(); }
    const std::string& last_exit() const { return last_exit_; }
    // The last STATUS= from the worker; "" if none.
    const std::string& status_text() const { return status_text_; }
    // One for each configured probe, in the current (or last) run.
    std::vector<ProbeSnapshot> probes() const;
    // Last WATCHDOG=1 of this run, if any.
    std::optional<TimePoint> last_heartbeat() const {
        return run_ ? run_->last_heartbeat : std::nullopt;
    }

    // A start that finds one of the worker's dirs locked by someone else is
    // delayed, not failed: retried after 1s, doubling up to 30s, with a
    // start-delayed event each time; the start limit does not count it.
    static constexpr Duration kLockRetryInitial = std::chrono::seconds(1);
    static constexpr Duration kLockRetryMax = std::chrono::seconds(30);

  private:
    // What a run needs before its process exists: who it runs as and its dirs.
    struct RunSetup {
        WorkerIdentity who;
        WorkDirLayout dirs;
        WorkerCheckpoints::RunDirs checkpoints;
        GpuAssignment gpus;  // gpu.devices resolved (gpu/gpu_assignment.h)
    };

    void launch();
    void fail_start(const Error& error);
    // The process exists (spawned, or `restored` by criu): watch it.
    void begin_run(SpawnedProcess spawned, bool restored);
    void restore_by_criu(RunSetup run);
    Result<std::filesystem::path> prepare_credentials_and_notify(const WorkerIdentity& who);
    // engine.api_key's value, read now (a rotated key is used at once); ""
    // without one.
    Result<std::string> engine_bearer() const;
    // Journals an unload's outcome (models-unloaded); whether it freed
    // memory, and what it did in words.
    std::pair<bool, std::string> journal_unload(const std::string& trigger,
                                                const Result<WorkerOllamaUnload::Outcome>& outcome,
                                                std::optional<uint64_t> before,
                                                std::optional<uint64_t> after);
    UniqueFd open_output();  // the worker's stdout/stderr stream; empty: none
    // memory.reserve: true when it fits (or none is set); else state waiting.
    bool admitted();
    Result<RunSetup> prepare_run();
    // gpu.devices resolved against the host's GPUs (WorkerContext::gpu_devices);
    // an error with EWOULDBLOCK for a device in error (the start waits).
    Result<GpuAssignment> assign_gpus() const;
    // The GPU release step (suspend_engine_step); `held`: the NVIDIA GPU
    // memory its processes hold, when known.
    WorkerSuspension::EngineStep gpu_release_step(std::optional<uint64_t> held);
    void wait_for_lock(const Error& error);
    // A new cgroup for the run, its limits written, and gpu.memory_max as
    // dmem.max on the VRAM of `gpus` (cap_gpu_memory).
    Result<void> prepare_cgroup(const GpuAssignment& gpus);
    // gpu.memory_max as the kernel's cap where the dmem controller has
    // regions for the worker's cards (cgroup/dmem.h); otherwise the rules
    // alone enforce it, which is logged when that changes.
    Result<void> cap_gpu_memory(const CgroupDir& dir, const GpuAssignment& gpus);
    Result<SpawnedProcess> spawn(const RunSetup& run);
    // How the worker's process is started (no cgroup, private /tmp or
    // output fds: spawn() adds those); exec probes run as it says.
    SpawnRequest launch_request(const WorkerIdentity& who, const WorkerPaths& paths,
                                const std::map<std::string, std::string>& assigned) const;
    // Sends checkpoint signals to this run's main process.
    WorkerCheckpoints::Signaller checkpoint_signaller();
    void watch_exit();
    void watch_notify();
    // The main process ended: reaps it, journals how, empties and removes
    // the cgroup, then finish_run(). Each step is one of the functions below.
    void on_exit();
    struct ReapedExit {
        std::optional<ExitStatus> status;  // empty: lost or not reaped
        bool status_unknown = false;       // an adopted run: not our child
    };
    // nullopt: not reapable yet (a tracer holds the zombie); watched again.
    std::optional<ReapedExit> reap_main_process();
    ExitReason exit_reason_of(const ReapedExit& reaped) const;
    // Ends what watched the run: probes, the pidfd, its timers.
    void end_run_watches();
    // After a run ended for memory: the room a restart waits for.
    void note_room_needed(const ExitReason& reason, std::optional<uint64_t> peak);
    // The `exited` event (and `oom-killed`), with PID, RUNTIME_MS, MEMORY_PEAK.
    void journal_exit(const ExitReason& reason, std::optional<uint64_t> peak);
    // Kills what the main process left behind, waits until the cgroup is
    // empty, removes it, then finish_run().
    void empty_cgroup_then_finish(const ExitReason& reason);
    void on_notify_readable();
    void handle_notify(const NotifyDatagram& datagram);
    void on_heartbeat();  // WATCHDOG=1
    // The configured watchdog, else the learned one once armed.
    std::optional<Duration> watchdog_timeout() const;
    void arm_watchdog();
    void on_watchdog_expired();
    // Loading waits for READY=1 (notify workers) and for the gate probe.
    bool loading_gated() const;
    // What loading still waits for, for messages: "READY=1", "a pass of the
    // startup probe (GET http://...)", or both.
    std::string awaited_signal() const;
    std::string parked_reason() const;
    void enter_running(const std::string& why);
    void on_probe_change(ProbeRole role, const ProbeChange& change);
    void kill_for_probe(ProbeRole role, const ProbeChange& change);
    void arm_start_timeout();
    void on_start_timeout();
    // Parks the worker after its run ended: `rule` (its `then: park`; empty
    // when no rule parked it) is recorded, `why` says what parked it.
    void park(const ExitReason& reason, const WorkerRun& ended, const std::string& rule,
              const std::string& why, std::vector<std::pair<std::string, std::string>> fields = {});
    void on_thawed();
    void stop_after_checkpoint(Then then, const std::string& rule,
                               const WorkerCheckpoints::Outcome& outcome);
    // Running: a checkpoint (`trigger`), then stop() whatever its outcome;
    // else stop() alone. done(how) as drain_stop says.
    void checkpoint_then_stop(const std::string& trigger,
                              std::function<void(const std::string& how)> done,
                              std::optional<Duration> bound = std::nullopt);
    void after_empty(Done next, int polls = 0);
    void finish_run(const ExitReason& reason);
    void begin_stop();
    void schedule_restart(const RestartVerdict& verdict);
    // Launches now, or once the host has room (restart_room.h).
    void launch_when_room();
    void launch_when_gpu_room();
    // Every change of state goes through here; `move` says which of the
    // lifecycle's moves it is (worker_state.h), and a change the lifecycle
    // does not list is logged as the bug it is.
    void set_state(WorkerState state, WorkerMove move);
    // The run has a main process that has not exited.
    bool live() const { return run_ && run_->stage == WorkerRun::Stage::live; }
    void persist() const;
    // Binds the notify socket and rebuilds what launch() keeps about a run
    // (how its process was launched, the checkpoint staging dir) for an adopted run.
    Result<void> rebind_after_adoption();
    // An adopted run the earlier image had suspended stays so (frozen, its
    // resume writes its configured limits). False when it cannot be kept
    // frozen: then it runs, with its configured limits written.
    bool adopt_suspension(const PersistedWorker& persisted, WorkerState run_state);
    // What an earlier daemon counted and said of the worker: restart and
    // host-kill counts, the last exit, the status text, the config snapshot.
    void take_over_history(const PersistedWorker& persisted);
    void emit(EventKind kind, std::string message,
              std::vector<std::pair<std::string, std::string>> fields = {});

    WorkerContext& ctx_;
    WorkerSpec spec_;
    // ctx_.cgroups.worker(name) and its path in the mount, built once: the
    // policy asks at every tick.
    CgroupDir cgroup_;
    std::string cgroup_in_mount_;
    RestartTracker tracker_;
    HostKillGuard host_kills_;  // parks a worker the host keeps running out with
    WorkerState state_ = WorkerState::stopped;

    std::optional<NotifySocket> notify_;
    std::unique_ptr<boost::asio::posix::stream_descriptor> notify_watch_;
    // On ctx_.clock: the stop timeout, the restart's delay, the watchdog, the
    // start timeout of a loading worker, the polls for an empty cgroup.
    std::unique_ptr<Timer> stop_timer_;
    std::unique_ptr<Timer> restart_timer_;
    std::unique_ptr<Timer> watchdog_timer_;
    std::unique_ptr<Timer> start_timer_;
    std::unique_ptr<Timer> empty_timer_;

    std::string config_snapshot_;
    // The current run, from its launch to its end (worker_run.h); empty
    // between runs.
    std::optional<WorkerRun> run_;
    // The rule that parked the worker (state parked only; empty when the
    // host kills parked it, host_kills_).
    std::string parked_rule_;
    std::optional<ParkedCheckpoint> parked_checkpoint_;  // state parked only
    std::unique_ptr<WorkerProbes> probes_;               // null without probes
    std::vector<Done> on_stopped_;
    WorkerCheckpoints checkpoints_;
    std::optional<uint64_t> room_needed_;           // the pending restart waits for room
    std::optional<GpuRoomNeeded> gpu_room_needed_;  // and for GPU room
    bool room_wait_logged_ = false;
    bool gpu_room_wait_logged_ = false;
    WorkerSuspension suspension_;
    WorkerVllmSleep vllm_sleep_;              // `suspend: {method: vllm-sleep}`
    WorkerGpuRelease gpu_release_;            // `suspend: {gpu: release}`
    WorkerOllamaUnload ollama_unload_;        // the preempt ladder's unload
    std::optional<TimePoint> waiting_since_;  // state waiting: for admission
    std::string waiting_reason_;
    std::string status_text_;
    std::string last_exit_;
    size_t rejected_notify_ = 0;
    TimePoint state_since_{};           // set_state(); the construction (or adoption) before
    std::string last_rejected_notify_;  // why the last one was dropped
    std::string dmem_note_;             // what cap_gpu_memory() last logged
    int lock_waits_ = 0;                // consecutive starts delayed by a foreign lock
};

}  // namespace infervisor
