// Worker: a worker's start (launch: admission, its dirs, cgroup, spawn or a
// criu restore), its state changes (set_state, checked against the
// lifecycle's table), explicit start, stop, restart and kill. The rest of
// its life is in worker_health.cpp (while it runs), worker_exit.cpp (the
// end of a run), worker_actions.cpp (policy actions, suspension, admission)
// and worker_adoption.cpp (state files, adoption).
#include "supervise/worker.h"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <syslog.h>

#include <algorithm>

#include "base/file_io.h"
#include "base/signal_names.h"
#include "base/units.h"
#include "cgroup/cgroup_limits.h"
#include "cgroup/dmem.h"
#include "gpu/gpu_device_groups.h"
#include "journal/journal_socket.h"
#include "notify/notify_message.h"
#include "policy/metrics.h"
#include "process/pidfd.h"
#include "process/proc_stat.h"
#include "process/signal_disposition.h"
#include "process/spawn.h"
#include "supervise/private_tmp.h"
#include "supervise/restart_room.h"
#include "supervise/worker_credentials.h"
#include "supervise/worker_launch.h"
#include "workdir/safe_path.h"

namespace infervisor {

namespace asio = boost::asio;
namespace fs = std::filesystem;

Worker::Worker(WorkerContext& ctx, WorkerSpec spec)
    : ctx_(ctx),
      spec_(std::move(spec)),
      cgroup_(ctx.cgroups.worker(spec_.name)),
      cgroup_in_mount_(cgroup_.path_in_mount(ctx.cgroup_mount)),
      tracker_(spec_.restart, ctx.clock),
      host_kills_(ctx.clock),
      stop_timer_(ctx.clock.make_timer()),
      restart_timer_(ctx.clock.make_timer()),
      watchdog_timer_(ctx.clock.make_timer()),
      start_timer_(ctx.clock.make_timer()),
      empty_timer_(ctx.clock.make_timer()),
      checkpoints_(ctx.io, ctx.clock, ctx.paths, spec_.name,
                   [this](EventKind kind, std::string message, WorkerCheckpoints::Fields fields) {
                       emit(kind, std::move(message), std::move(fields));
                   }),
      suspension_(
          ctx.io, ctx.clock, spec_.name,
          [this](EventKind kind, std::string message, WorkerSuspension::Fields fields) {
              emit(kind, std::move(message), std::move(fields));
          },
          [this] { on_thawed(); }),
      vllm_sleep_(ctx.io),
      gpu_release_(ctx.io),
      ollama_unload_(ctx.io),
      state_since_(ctx.clock.now()) {
    checkpoints_.set_spec(spec_.checkpoint);
    std::optional<std::filesystem::path> api_key_file;
    if (spec_.engine && !spec_.engine->api_key.empty())
        if (auto it = spec_.credentials.find(spec_.engine->api_key); it != spec_.credentials.end())
            api_key_file = it->second;
    checkpoints_.set_engine(spec_.engine, std::move(api_key_file));
    if (spec_.probes.startup || spec_.probes.readiness || spec_.probes.liveness)
        probes_ = std::make_unique<WorkerProbes>(
            ctx_, spec_.name, spec_.probes,
            [this](ProbeRole role, const ProbeChange& change) { on_probe_change(role, change); });
    checkpoints_.set_process_lookup([this] {
        WorkerCheckpoints::Processes p;
        if (!live()) return p;
        p.main = run_->pid;
        p.all = cgroup().procs().value_or({});
        return p;
    });
}

Worker::~Worker() { probes_.reset(); }

void Worker::emit(EventKind kind, std::string message,
                  std::vector<std::pair<std::string, std::string>> fields) {
    ctx_.events.emit(Event{kind, spec_.name, std::move(message), std::move(fields)});
}

void Worker::set_state(WorkerState state, WorkerMove move) {
    if (state_ == state) return;
    if (!move_allowed(move, state_, state)) {
        count_unlisted_move();
        spdlog::error("{}: {} -> {} is no move of the lifecycle ({}): a bug, please report it",
                      spec_.name, state_name(state_), state_name(state), move_name(move));
    }
    spdlog::debug("{}: {} -> {} ({})", spec_.name, state_name(state_), state_name(state),
                  move_name(move));
    // Straight to running (no readiness signal): ready at its start.
    if (state == WorkerState::running && main_pid() != 0 && !run_->ready_at)
        run_->ready_at = state_ == WorkerState::starting ? ctx_.clock.now() : run_->started_at;
    if (state == WorkerState::starting && main_pid() != 0) run_->signals_readiness = true;
    if (state != WorkerState::parked) {
        parked_checkpoint_.reset();
        parked_rule_.clear();
    }
    state_ = state;
    state_since_ = ctx_.clock.now();
    persist();
}

std::vector<ProbeSnapshot> Worker::probes() const {
    if (!probes_) return {};
    return probes_->snapshot();
}

void Worker::start() {
    if (state_ == WorkerState::suspended) {
        (void)resume("start");  // a start of a suspended worker lets it run
        return;
    }
    if (state_ == WorkerState::stopping) {
        run_->restart_requested = true;  // start again once the stop has finished
        return;
    }
    if (state_ == WorkerState::starting || state_ == WorkerState::running) return;
    restart_timer_->cancel();
    // An operator asked: the start limit counts afresh.
    if (state_ == WorkerState::failed || state_ == WorkerState::parked) {
        tracker_.reset();
        host_kills_.reset();
    }
    launch();
}

void Worker::restart() {
    if (state_ == WorkerState::stopped || state_ == WorkerState::failed ||
        state_ == WorkerState::parked || state_ == WorkerState::backoff ||
        state_ == WorkerState::waiting) {
        tracker_.reset();
        host_kills_.reset();
        restart_timer_->cancel();
        launch();
        return;
    }
    stop();
    if (run_) run_->restart_requested = true;  // after stop(), which clears it
}

Result<void> Worker::kill(int sig) {
    if (main_pid() == 0) return plain_error("worker '" + spec_.name + "' is not running");
    CgroupDir dir = cgroup();
    if (sig == SIGKILL) return dir.kill();
    // Not read-then-kill(2): a pid freed and reused meanwhile would get the
    // signal from root (process/pidfd.h).
    auto sent = signal_listed([&dir] { return dir.procs(); }, sig);
    if (!sent) return sent.error();
    return {};
}

void Worker::launch() {
    if (ctx_.drained && ctx_.drained()) {
        // A restart or a start that raced the drain: nothing runs until
        // `infervisorctl undrain`, which starts the workers that were up.
        restart_timer_->cancel();
        if (state_ == WorkerState::backoff || state_ == WorkerState::waiting)
            set_state(WorkerState::stopped, WorkerMove::stop);
        return;
    }
    if (!admitted()) return;
    auto setup = prepare_run();
    if (!setup && setup.error().code == EWOULDBLOCK) return wait_for_lock(setup.error());
    lock_waits_ = 0;
    if (!tracker_.try_start()) {
        set_state(WorkerState::failed, WorkerMove::hit_start_limit);
        emit(EventKind::failed,
             "start limit hit: " + std::to_string(spec_.restart.start_limit_burst) +
                 " starts within " + format_duration(spec_.restart.start_limit_interval) +
                 "; not restarting until started explicitly",
             {{"START_LIMIT_BURST", std::to_string(spec_.restart.start_limit_burst)}});
        return;
    }
    run_.emplace();  // a new run, with nothing of the last one
    room_needed_.reset();
    gpu_room_needed_.reset();
    if (!setup) return fail_start(setup.error());
    if (auto r = prepare_cgroup(setup->gpus); !r) return fail_start(r.error());
    if (setup->checkpoints.criu_restore) return restore_by_criu(std::move(*setup));
    auto spawned = spawn(*setup);
    if (!spawned) return fail_start(spawned.error());
    begin_run(std::move(*spawned), false);
}

void Worker::fail_start(const Error& error) {
    emit(EventKind::start_failed, "could not start: " + error.message());
    (void)cgroup().remove();
    ExitReason never_ran{ExitStatus::exited_with(127)};
    never_ran.start_error = error.message();
    finish_run(never_ran);
}

void Worker::begin_run(SpawnedProcess spawned_process, bool restored) {
    auto* spawned = &spawned_process;
    run_->stage = WorkerRun::Stage::live;
    run_->pid = spawned->pid;
    run_->pid_start_time = process_start_time(ctx_.paths.procfs, run_->pid).value_or(0);
    run_->started_at = ctx_.clock.now();
    run_->pidfd =
        std::make_unique<asio::posix::stream_descriptor>(ctx_.io, spawned->pidfd.release());
    // A restored process has long sent READY=1 (and passed its probes).
    if (restored) run_->ready_notified = run_->gate_passed = true;
    set_state(loading_gated() ? WorkerState::starting : WorkerState::running, WorkerMove::launch);
    emit(EventKind::started,
         std::string(restored ? "restored by criu" : "started") + " as pid " +
             std::to_string(run_->pid) + " in " + cgroup_in_mount() +
             " (memory.max=" + format_size(spec_.memory.max) + ")",
         {{"PID", std::to_string(run_->pid)},
          {"CGROUP", cgroup_in_mount()},
          {"BORN_IN_CGROUP", spawned->born_in_cgroup ? "1" : "0"},
          {"MEMORY_MAX", spec_.memory.max ? std::to_string(*spec_.memory.max) : "max"}});
    checkpoints_.run_started(checkpoint_signaller());
    if (probes_) probes_->run_started(run_->launched);
    if (!loading_gated()) enter_running(restored ? "restored by criu" : "");
    watch_exit();
    arm_watchdog();
    arm_start_timeout();
    if (run_->stop_requested && state_ != WorkerState::stopping)
        begin_stop();  // asked for while criu restored it
}

Result<void> Worker::prepare_cgroup(const GpuAssignment& gpus) {
    CgroupDir dir = cgroup();
    if (dir.exists()) {
        auto populated = dir.populated();
        if (populated && *populated)
            return plain_error(dir.path().string() + " still holds processes of an earlier run");
        if (auto r = dir.remove_tree(); !r) return r;
    }
    if (auto r = dir.create(); !r) return r;
    auto warnings = ctx_.write_limits(dir, limits_of(spec_));
    if (!warnings) return warnings.error();
    for (const auto& w : *warnings) spdlog::warn("{}: {}", spec_.name, w);
    return cap_gpu_memory(dir, gpus);
}

Result<void> Worker::cap_gpu_memory(const CgroupDir& dir, const GpuAssignment& gpus) {
    if (!spec_.gpu || !spec_.gpu->memory_max) return {};
    std::vector<std::string> cards;  // none: every card's region
    for (const auto& d : gpus.devices) cards.push_back(d.pci_bus_id);
    auto cap =
        cap_device_memory(dir, ctx_.cgroup_mount / "dmem.capacity", cards, *spec_.gpu->memory_max);
    if (!cap) return cap.error();
    std::string note;
    switch (cap->outcome) {
        case DmemCap::Outcome::capped:
            note = "gpu.memory_max=" + format_size(spec_.gpu->memory_max) +
                   " is the kernel's cap (dmem.max) on each of";
            for (const auto& region : cap->regions) note += " " + region;
            break;
        case DmemCap::Outcome::controller_absent:
            note =
                "gpu.memory_max is enforced by rules only: the dmem cgroup controller is not "
                "available for " +
                dir.path().string() + " (Linux 6.14+, delegated)";
            break;
        case DmemCap::Outcome::no_regions:
            note = "gpu.memory_max is enforced by rules only: no VRAM region of its GPUs in " +
                   (ctx_.cgroup_mount / "dmem.capacity").string() +
                   " (NVIDIA's driver registers none)";
            break;
    }
    if (note != dmem_note_) spdlog::info("{}: {}", spec_.name, note);
    dmem_note_ = std::move(note);
    return {};
}

WorkerCheckpoints::Signaller Worker::checkpoint_signaller() {
    return [this](int sig, bool thaw) -> Result<void> {
        if (!run_ || !run_->pidfd) return plain_error("not running");
        // A frozen worker could not act on the signal.
        if (thaw)
            (void)cgroup().set_frozen(false);
        else if (cgroup().freeze_requested().value_or(false))
            return plain_error("the worker is frozen");
        if (sig != 0) {
            // Unreadable: no evidence against sending, so it is sent.
            auto d = read_signal_disposition(ctx_.paths.procfs, run_->pid, sig);
            if (d && d->would_end_it)
                return plain_error("its process " + std::to_string(run_->pid) +
                                   " neither catches nor blocks " + signal_name(sig) +
                                   " (SigCgt and SigBlk in /proc/" + std::to_string(run_->pid) +
                                   "/status), so the signal would end it: not sent");
        }
        return send_signal(run_->pidfd->native_handle(), sig);
    };
}

Result<Worker::RunSetup> Worker::prepare_run() {
    auto who = resolve_identity(spec_, ctx_.paths);
    if (!who) return who.error();
    WorkDirSpec workdir = spec_.workdir;
    workdir.worker = spec_.name;  // specs built in code may leave it empty
    auto dirs = ctx_.workdirs.prepare(workdir, who->uid, who->gid);
    if (!dirs) return dirs.error();
    auto gpus = assign_gpus();
    if (!gpus) return gpus.error();
    // The render nodes' groups of its AMD and Intel cards, for every user.
    auto device_groups = gpu_device_groups(gpus->devices, ctx_.paths.sysfs, ctx_.paths.devfs);
    if (!device_groups) return plain_error("gpu.devices: " + device_groups.error().message());
    for (gid_t g : *device_groups)
        if (std::find(who->supplementary_groups.begin(), who->supplementary_groups.end(), g) ==
            who->supplementary_groups.end())
            who->supplementary_groups.push_back(g);
    auto checkpoints = checkpoints_.prepare_run(
        ProcessIdentity::of(who->uid, who->gid, who->supplementary_groups));
    if (!checkpoints) return checkpoints.error();
    return RunSetup{std::move(*who), std::move(*dirs), std::move(*checkpoints), std::move(*gpus)};
}

Result<GpuAssignment> Worker::assign_gpus() const {
    if (!spec_.gpu || spec_.gpu->devices.empty()) return GpuAssignment{};
    if (!ctx_.gpu_devices) return plain_error("gpu.devices names GPUs, and this daemon reads none");
    auto host = ctx_.gpu_devices();
    if (!host) return host.error();  // not known yet: EWOULDBLOCK, the start waits
    auto assigned = infervisor::assign_gpus(*spec_.gpu, *host);
    // A card in error may come back (a reset): the start waits for it, not
    // counted as a failed start, rather than crash-looping on it.
    if (!assigned && assigned.error().code == EWOULDBLOCK) return assigned.error();
    if (!assigned) return plain_error(assigned.error().what);
    return assigned;
}

void Worker::wait_for_lock(const Error& error) {
    ++lock_waits_;
    int doublings = std::min(lock_waits_ - 1, 5);
    Duration delay = std::min<Duration>(kLockRetryInitial * (1 << doublings), kLockRetryMax);
    set_state(WorkerState::backoff, WorkerMove::delay_start);
    emit(EventKind::start_delayed,
         "start delayed: " + error.what + "; not counted as a failed start, retrying in " +
             format_duration(delay) + " (attempt " + std::to_string(lock_waits_) + ")",
         {{"DELAY_MS", milliseconds_text(delay)}, {"ATTEMPT", std::to_string(lock_waits_)}});
    restart_timer_->arm(delay, [this] {
        if (state_ == WorkerState::backoff) launch();
    });
}

Result<fs::path> Worker::prepare_credentials_and_notify(const WorkerIdentity& who) {
    // Installed only now that the start counts; finish_run removes them.
    auto credentials = install_credentials(ctx_.paths, spec_.name, spec_.credentials, who.uid);
    if (!credentials) return credentials.error();
    if (!notify_) {
        auto sock =
            NotifySocket::bind(ctx_.paths.runtime_dir / "notify" / spec_.name, who.uid, who.gid);
        if (!sock) return sock.error();
        notify_.emplace(std::move(*sock));
        watch_notify();
    }
    return *credentials;
}

UniqueFd Worker::open_output() {
    UniqueFd output;
    if (ctx_.output_to_journal) {
        auto stream = open_journal_stream("infervisor-worker-" + spec_.name, LOG_INFO);
        if (stream)
            output = std::move(*stream);
        else
            spdlog::warn("{}: no journal stream for its output ({}); using the daemon's stderr",
                         spec_.name, stream.error().message());
    }
    return output;
}

void Worker::restore_by_criu(RunSetup run) {
    auto credentials = prepare_credentials_and_notify(run.who);
    if (!credentials) return fail_start(credentials.error());
    auto cgroup_fd = cgroup().open_dir();
    if (!cgroup_fd) return fail_start(cgroup_fd.error());
    // What exec probes run as: the worker's identity, as for a spawn.
    run_->launched = launch_request(run.who,
                                    {notify_->path(), run.dirs.workdir, run.dirs.tmpdir,
                                     run.checkpoints.staging, *credentials, std::nullopt},
                                    run.gpus.environment);
    UniqueFd output = open_output();
    if (!output) output.reset(::fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 0));
    set_state(WorkerState::starting,
              WorkerMove::launch);  // the run stays `launching` until criu is done
    auto setup = std::make_shared<RunSetup>(std::move(run));
    checkpoints_.restore_by_criu(
        setup->checkpoints, std::make_shared<UniqueFd>(std::move(*cgroup_fd)), cgroup_in_mount(),
        std::make_shared<UniqueFd>(std::move(output)),
        [this, setup](Result<SpawnedProcess> restored) {
            if (restored) return begin_run(std::move(*restored), true);
            // Whatever criu left in the cgroup goes; then the command starts
            // afresh (or, when a stop came meanwhile, the run just ends).
            (void)cgroup().kill();
            after_empty([this, setup] {
                if (run_->stop_requested) {
                    (void)cgroup().remove();
                    return finish_run(ExitReason{ExitStatus::killed_by(SIGKILL)});
                }
                setup->checkpoints.criu_restore.reset();
                auto spawned = spawn(*setup);
                if (!spawned) return fail_start(spawned.error());
                begin_run(std::move(*spawned), false);
            });
        });
}

Result<SpawnedProcess> Worker::spawn(const RunSetup& run) {
    const WorkerIdentity& who = run.who;
    auto credentials = prepare_credentials_and_notify(who);
    if (!credentials) return credentials.error();
    auto cgroup_fd = cgroup().open_dir();
    if (!cgroup_fd) return cgroup_fd.error();
    UniqueFd private_tmp;
    // criu 3.17 cannot dump the worker's own mount namespace: a criu worker
    // shares the host's /tmp (infervisor.yaml(5)).
    if (spec_.private_tmp && spec_.checkpoint.method != CheckpointMethod::criu) {
        if (auto why = why_no_private_tmp(run.dirs.workdir, spec_.workdir)) {
            spdlog::info("{}: shares the host's /tmp: {}", spec_.name, *why);
        } else {
            auto tmp = open_trusted_dir(run.dirs.tmpdir, WalkOptions{who.uid});
            if (!tmp) return tmp.error();
            private_tmp = std::move(*tmp);
        }
    }

    run_->launched =
        launch_request(who,
                       {notify_->path(), run.dirs.workdir, run.dirs.tmpdir, run.checkpoints.staging,
                        *credentials, run.checkpoints.restore_from},
                       run.gpus.environment);
    SpawnRequest req = run_->launched;
    req.cgroup_fd = cgroup_fd->get();
    req.private_tmp_fd = private_tmp ? private_tmp.get() : -1;

    UniqueFd output = open_output();
    req.stdout_fd = req.stderr_fd = output ? output.get() : STDERR_FILENO;
    return spawn_process(req);
}

SpawnRequest Worker::launch_request(const WorkerIdentity& who, const WorkerPaths& paths,
                                    const std::map<std::string, std::string>& assigned) const {
    SpawnRequest req;
    req.argv = spec_.command;
    req.environment = worker_environment(spec_, who, paths, assigned);
    req.uid = who.uid;
    req.gid = who.gid;
    req.supplementary_groups = who.supplementary_groups;
    req.working_directory = paths.workdir;
    req.oom_score_adj = static_cast<int>(spec_.oom_score_adj);
    return req;
}

void Worker::watch_exit() {
    run_->pidfd->async_wait(asio::posix::stream_descriptor::wait_read,
                            [this](const boost::system::error_code& ec) {
                                if (ec == asio::error::operation_aborted) return;
                                on_exit();
                            });
}

void Worker::stop(Done done) {
    switch (state_) {
        case WorkerState::stopped:
        case WorkerState::failed:
        case WorkerState::parked:
            if (done) done();
            return;
        case WorkerState::backoff:
            restart_timer_->cancel();
            set_state(WorkerState::stopped, WorkerMove::stop);
            emit(EventKind::stopped, "stopped (was waiting to restart)");
            if (done) done();
            return;
        case WorkerState::waiting:
            waiting_since_.reset();
            set_state(WorkerState::stopped, WorkerMove::stop);
            emit(EventKind::stopped, "stopped (was waiting for its memory.reserve to fit)");
            if (done) done();
            return;
        case WorkerState::stopping:
            // Also when a policy stop is under way: an explicit stop wins.
            run_->stop_requested = true;
            run_->restart_requested = false;
            on_stopped_.push_back(std::move(done));
            return;
        case WorkerState::starting:
        case WorkerState::running:
        case WorkerState::suspended:
            break;
    }
    if (run_->stage == WorkerRun::Stage::launching) {  // criu restores it: stopped once up
        run_->stop_requested = true;
        run_->restart_requested = false;
        on_stopped_.push_back(std::move(done));
        return;
    }
    run_->stop_requested = true;
    run_->restart_requested = false;  // an explicit stop cancels a pending restart
    on_stopped_.push_back(std::move(done));
    begin_stop();
}

void Worker::begin_stop() {
    suspension_.abandon();  // limits back, thawed: it must act on its stop signal
    set_state(WorkerState::stopping, WorkerMove::stop);
    if (probes_) probes_->run_ended();  // a stopping worker is not judged
    watchdog_timer_->cancel();
    start_timer_->cancel();
    if (run_->pidfd) (void)send_signal(run_->pidfd->native_handle(), spec_.stop_signal);
    (void)cgroup().set_frozen(false);  // a frozen worker could not act on the signal
    stop_timer_->arm(spec_.stop_timeout, [this] {
        if (state_ != WorkerState::stopping || exiting()) return;
        emit(EventKind::stop_escalated,
             "did not stop within " + format_duration(spec_.stop_timeout) + " of " +
                 signal_name(spec_.stop_signal) + "; killing its cgroup",
             {{"STOP_TIMEOUT_MS", milliseconds_text(spec_.stop_timeout)}});
        (void)cgroup().kill();
    });
}

}  // namespace infervisor
