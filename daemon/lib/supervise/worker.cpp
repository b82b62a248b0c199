#include "supervise/worker.h"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <syslog.h>
#include <systemd/sd-journal.h>

#include "base/file_io.h"
#include "base/signal_names.h"
#include "cgroup/cgroup_limits.h"
#include "cgroup/cgroup_stats.h"
#include "notify/notify_message.h"
#include "policy/metrics.h"
#include "process/pidfd.h"
#include "process/proc_stat.h"
#include "process/spawn.h"
#include "supervise/private_tmp.h"
#include "supervise/restart_room.h"
#include "supervise/worker_credentials.h"
#include "supervise/worker_launch.h"
#include "workdir/safe_path.h"

namespace infervisor {

namespace asio = boost::asio;
namespace fs = std::filesystem;

namespace {

std::string ms(Duration d) { return std::to_string(d.count()); }

std::string human_size(uint64_t bytes) {
    return format_measurement(MetricUnit::bytes, static_cast<double>(bytes));
}

}  // namespace

Worker::Worker(WorkerContext& ctx, WorkerSpec spec)
    : ctx_(ctx),
      spec_(std::move(spec)),
      tracker_(spec_.restart, ctx.clock),
      stop_timer_(ctx.io),
      restart_timer_(ctx.io),
      watchdog_timer_(ctx.io),
      start_timer_(ctx.io),
      empty_timer_(ctx.io),
      checkpoints_(ctx.io, ctx.clock, ctx.paths, spec_.name,
                   [this](EventKind kind, std::string message, WorkerCheckpoints::Fields fields) {
                       emit(kind, std::move(message), std::move(fields));
                   }),
      suspension_(
          ctx.io, ctx.clock, spec_.name,
          [this](EventKind kind, std::string message, WorkerSuspension::Fields fields) {
              emit(kind, std::move(message), std::move(fields));
          },
          [this] { on_thawed(); }) {
    checkpoints_.set_spec(spec_.checkpoint);
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

Worker::~Worker() {
    probes_.reset();
    stop_timer_.cancel();
    restart_timer_.cancel();
    watchdog_timer_.cancel();
    start_timer_.cancel();
    empty_timer_.cancel();
}

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
    persist();
}

std::string Worker::cgroup_path_in_proc() const {
    return "/" + cgroup().path().lexically_relative(ctx_.cgroup_mount).string();
}

WorkerSnapshot Worker::snapshot() const {
    WorkerSnapshot s;
    s.name = spec_.name;
    s.state = state_;
    s.pid = main_pid();
    s.started_at = started_at();
    s.restarts = tracker_.total_restarts();
    s.status_text = status_text_;
    s.last_exit = last_exit_;
    s.state_reason = state_reason();
    s.checkpoint = parked_checkpoint_;
    if (main_pid() != 0) {
        CgroupStats stats(cgroup());
        s.memory_current = value_or_empty(stats.memory_current());
        s.memory_peak = value_or_empty(stats.memory_peak());
        s.swap_current = value_or_empty(stats.swap_current());
    }
    if (probes_) s.probes = probes_->snapshot();
    return s;
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
    restart_timer_.cancel();
    // An operator asked: the start limit counts afresh.
    if (state_ == WorkerState::failed || state_ == WorkerState::parked) tracker_.reset();
    launch();
}

void Worker::restart() {
    if (state_ == WorkerState::stopped || state_ == WorkerState::failed ||
        state_ == WorkerState::parked || state_ == WorkerState::backoff ||
        state_ == WorkerState::waiting) {
        tracker_.reset();
        restart_timer_.cancel();
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
    if (!setup) return fail_start(setup.error());
    if (auto r = prepare_cgroup(); !r) return fail_start(r.error());
    if (setup->checkpoints.criu_restore) return restore_by_criu(std::move(*setup));
    auto spawned = spawn(*setup);
    if (!spawned) return fail_start(spawned.error());
    begin_run(std::move(*spawned), false);
}

void Worker::fail_start(const Error& error) {
    emit(EventKind::start_failed, "could not start: " + error.message());
    (void)cgroup().remove();
    finish_run(ExitReason{ExitStatus::exited_with(127)});
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
             std::to_string(run_->pid) + " in " + cgroup_path_in_proc() +
             " (memory.max=" + format_size(spec_.memory.max) + ")",
         {{"PID", std::to_string(run_->pid)},
          {"CGROUP", cgroup_path_in_proc()},
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

Result<void> Worker::prepare_cgroup() {
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
    auto checkpoints = checkpoints_.prepare_run(who->uid, who->gid);
    if (!checkpoints) return checkpoints.error();
    return RunSetup{std::move(*who), std::move(*dirs), std::move(*checkpoints)};
}

void Worker::wait_for_lock(const Error& error) {
    ++lock_waits_;
    int doublings = std::min(lock_waits_ - 1, 5);
    Duration delay = std::min<Duration>(kLockRetryInitial * (1 << doublings), kLockRetryMax);
    set_state(WorkerState::backoff, WorkerMove::delay_start);
    emit(EventKind::start_delayed,
         "start delayed: " + error.what + "; not counted as a failed start, retrying in " +
             format_duration(delay) + " (attempt " + std::to_string(lock_waits_) + ")",
         {{"DELAY_MS", ms(delay)}, {"ATTEMPT", std::to_string(lock_waits_)}});
    restart_timer_.expires_after(delay);
    restart_timer_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec && state_ == WorkerState::backoff) launch();
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
        output.reset(
            sd_journal_stream_fd(("infervisor-worker-" + spec_.name).c_str(), LOG_INFO, 1));
        if (!output)
            spdlog::warn("{}: no journal stream for its output; using the daemon's stderr",
                         spec_.name);
    }
    return output;
}

void Worker::restore_by_criu(RunSetup run) {
    auto credentials = prepare_credentials_and_notify(run.who);
    if (!credentials) return fail_start(credentials.error());
    auto cgroup_fd = cgroup().open_dir();
    if (!cgroup_fd) return fail_start(cgroup_fd.error());
    // What exec probes run as: the worker's identity, as for a spawn.
    run_->launched = launch_request(run.who, {notify_->path(), run.dirs.workdir, run.dirs.tmpdir,
                                              run.checkpoints.staging, *credentials, std::nullopt});
    UniqueFd output = open_output();
    if (!output) output.reset(::fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 0));
    set_state(WorkerState::starting,
              WorkerMove::launch);  // the run stays `launching` until criu is done
    auto setup = std::make_shared<RunSetup>(std::move(run));
    checkpoints_.restore_by_criu(
        setup->checkpoints, std::make_shared<UniqueFd>(std::move(*cgroup_fd)),
        cgroup_path_in_proc(), std::make_shared<UniqueFd>(std::move(output)),
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
        launch_request(who, {notify_->path(), run.dirs.workdir, run.dirs.tmpdir,
                             run.checkpoints.staging, *credentials, run.checkpoints.restore_from});
    SpawnRequest req = run_->launched;
    req.cgroup_fd = cgroup_fd->get();
    req.private_tmp_fd = private_tmp ? private_tmp.get() : -1;

    UniqueFd output = open_output();
    req.stdout_fd = req.stderr_fd = output ? output.get() : STDERR_FILENO;
    return spawn_process(req);
}

SpawnRequest Worker::launch_request(const WorkerIdentity& who, const WorkerPaths& paths) const {
    SpawnRequest req;
    req.argv = spec_.command;
    req.environment = worker_environment(spec_, who, paths);
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

void Worker::watch_notify() {
    notify_watch_ = std::make_unique<asio::posix::stream_descriptor>(
        ctx_.io, ::fcntl(notify_->fd(), F_DUPFD_CLOEXEC, 0));
    notify_watch_->async_wait(asio::posix::stream_descriptor::wait_read,
                              [this](const boost::system::error_code& ec) {
                                  if (ec) return;
                                  on_notify_readable();
                              });
}

void Worker::on_notify_readable() {
    for (int i = 0; i < 64; ++i) {  // bounded: a flood cannot starve the loop
        auto d = notify_->receive();
        if (!d) {
            spdlog::warn("{}: notify socket: {}", spec_.name, d.error().message());
            break;
        }
        if (!*d) break;
        handle_notify(**d);
    }
    notify_watch_->async_wait(asio::posix::stream_descriptor::wait_read,
                              [this](const boost::system::error_code& ec) {
                                  if (ec) return;
                                  on_notify_readable();
                              });
}

void Worker::handle_notify(const NotifyDatagram& d) {
    auto reject = [&](const std::string& why) {
        ++rejected_notify_;
        // Bounded logging: the first few, then every 100th.
        if (rejected_notify_ <= 5 || rejected_notify_ % 100 == 0)
            emit(EventKind::notify_rejected,
                 "notify message from pid " + std::to_string(d.pid) + " dropped: " + why + " (" +
                     std::to_string(rejected_notify_) + " dropped so far)",
                 {{"SENDER_PID", std::to_string(d.pid)},
                  {"SENDER_UID", std::to_string(d.uid)},
                  {"REJECTED_TOTAL", std::to_string(rejected_notify_)}});
    };
    if (d.truncated) return reject("longer than " + std::to_string(kMaxNotifyMessage) + " bytes");
    if (!process_in_cgroup(ctx_.paths.procfs, d.pid, cgroup_path_in_proc())) {
        // A sender that has ended and been reaped cannot be told apart; when
        // the daemon is not its parent (an adopted worker), that happens to
        // a worker's own last message (WATCHDOG=1, then its stop signal):
        // dropped, but no sign of a hostile sender.
        std::error_code ec;
        if (!std::filesystem::exists(ctx_.paths.procfs / std::to_string(d.pid), ec)) {
            spdlog::debug("{}: notify message from pid {} dropped: it has ended", spec_.name,
                          d.pid);
            return;
        }
        return reject("sender is not a process of this worker");
    }
    auto msg = parse_notify_message(d.data);
    if (!msg) return reject(msg.error().what);
    if (const auto* status = msg->get("STATUS")) status_text_ = status->substr(0, 256);
    if (!run_) return;  // what follows concerns a run
    if (msg->has("WATCHDOG", "1")) {
        run_->last_heartbeat = ctx_.clock.now();
        arm_watchdog();
    }
    if (msg->has("READY", "1") && state_ == WorkerState::starting) {
        run_->ready_notified = true;
        if (!loading_gated()) enter_running("READY=1");
    }
    if (msg->has("CHECKPOINT", "1")) checkpoints_.on_checkpoint_message();
}

bool Worker::loading_gated() const {
    bool notified = run_ && run_->ready_notified, passed = run_ && run_->gate_passed;
    return (spec_.notify && !notified) || (spec_.probes.gate() && !passed);
}

std::string Worker::awaited_signal() const {
    bool notified = run_ && run_->ready_notified, passed = run_ && run_->gate_passed;
    std::string awaited;
    if (spec_.notify && !notified) awaited = "READY=1";
    if (auto gate = spec_.probes.gate(); gate && !passed)
        awaited += (awaited.empty() ? "" : " and no ") + std::string("pass of the ") +
                   std::string(probe_role_name(*gate)) + " probe (" +
                   describe_probe(*spec_.probes.of(*gate)) + ")";
    return awaited;
}

// The end of loading: READY=1, the gate probe's first pass, or at once for
// a worker with neither. `why` empty: there was nothing to wait for.
void Worker::enter_running(const std::string& why) {
    start_timer_.cancel();
    set_state(WorkerState::running, WorkerMove::ready);
    emit(EventKind::ready, why.empty() ? "running" : "ready (" + why + ")",
         {{"PID", std::to_string(run_->pid)}});
    // Periodic checkpoints start; a restore counts as done when the worker
    // said so (READY=1 or a passing probe), not merely when it was spawned.
    if (run_->started_at) checkpoints_.run_ready(*run_->started_at, !why.empty());
    if (probes_) probes_->loading_over();
}

void Worker::on_probe_change(ProbeRole role, const ProbeChange& change) {
    if (!live() || state_ == WorkerState::stopping) return;
    const bool gate = spec_.probes.gate() == role;
    if (change.to == ProbeVerdict::passing && gate && state_ == WorkerState::starting) {
        run_->gate_passed = true;
        if (!loading_gated())
            enter_running(std::string(probe_role_name(role)) +
                          " probe passed: " + change.outcome.detail);
        return;
    }
    if (change.to != ProbeVerdict::failing) return;
    if (role == ProbeRole::liveness ||
        (role == ProbeRole::startup && state_ == WorkerState::starting))
        kill_for_probe(role, change);
}

// A failing liveness probe (stuck) or startup probe (the load failed): the
// run ends like a policy kill, and the restart policy decides what follows.
void Worker::kill_for_probe(ProbeRole role, const ProbeChange& change) {
    if (run_->killed_by_policy) return;  // a kill is already under way
    const ProbeSpec& spec = *spec_.probes.of(role);
    run_->killed_by_policy = true;
    run_->kill_reason = std::string(probe_role_name(role)) + " probe failed " +
                        std::to_string(change.streak) + " times in a row: " + change.outcome.detail;
    auto fields = probe_fields(role, spec, change.outcome);
    fields.insert(fields.end(), {{"ACTION", "kill"},
                                 {"THEN", "worker_policy"},
                                 {"PROBE_STREAK", std::to_string(change.streak)},
                                 {"PID", std::to_string(run_->pid)}});
    emit(EventKind::probe_failed,
         run_->kill_reason + " (" + describe_probe(spec) + "); killing the worker", fields);
    if (auto r = cgroup().kill(); !r) spdlog::error("{}: {}", spec_.name, r.error().message());
}

void Worker::arm_watchdog() {
    if (spec_.watchdog.count() <= 0 || main_pid() == 0) return;
    watchdog_timer_.expires_after(spec_.watchdog);
    watchdog_timer_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec) on_watchdog_expired();
    });
}

void Worker::on_watchdog_expired() {
    if (!live() || state_ == WorkerState::stopping || state_ == WorkerState::suspended) return;
    run_->killed_by_policy = true;
    emit(EventKind::policy_action,
         "watchdog: no WATCHDOG=1 for " + format_duration(spec_.watchdog) + "; killing the worker",
         {{"RULE", "watchdog"},
          {"ACTION", "kill"},
          {"THEN", "worker_policy"},
          {"DRY_RUN", "0"},
          {"RESULT", "done"},
          {"WATCHDOG_MS", ms(spec_.watchdog)}});
    if (auto r = cgroup().kill(); !r) spdlog::error("{}: {}", spec_.name, r.error().message());
}

void Worker::arm_start_timeout() {
    if (!loading_gated() || spec_.start_timeout.count() <= 0 || main_pid() == 0) return;
    start_timer_.expires_after(spec_.start_timeout);
    start_timer_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec) on_start_timeout();
    });
}

void Worker::on_start_timeout() {
    // A policy kill already under way keeps its own reason.
    if (!live() || run_->killed_by_policy || state_ != WorkerState::starting) return;
    run_->start_timed_out = true;
    emit(EventKind::start_failed,
         "no " + awaited_signal() + " within " + format_duration(spec_.start_timeout) +
             "; killing its cgroup",
         {{"PID", std::to_string(run_->pid)}, {"START_TIMEOUT_MS", ms(spec_.start_timeout)}});
    if (auto r = cgroup().kill(); !r) spdlog::error("{}: {}", spec_.name, r.error().message());
}

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
            empty_timer_.expires_after(std::chrono::milliseconds(100));
            empty_timer_.async_wait([this](const boost::system::error_code& ec) {
                if (!ec) watch_exit();
            });
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
    watchdog_timer_.cancel();
    start_timer_.cancel();
    stop_timer_.cancel();
}

void Worker::note_room_needed(const ExitReason& reason, std::optional<uint64_t> peak) {
    room_needed_.reset();
    if (reason.oom_killed() || (run_->killed_by_policy && run_->ended_for_memory))
        room_needed_ =
            run_->serving_baseline ? run_->serving_baseline : room_needed(spec_.memory.max, peak);
}

void Worker::journal_exit(const ExitReason& reason, std::optional<uint64_t> peak) {
    Duration ran = run_->started_at
                       ? std::chrono::duration_cast<Duration>(ctx_.clock.now() - *run_->started_at)
                       : Duration(0);
    std::vector<std::pair<std::string, std::string>> fields = {{"PID", std::to_string(run_->pid)},
                                                               {"RUNTIME_MS", ms(ran)}};
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
    empty_timer_.expires_after(std::chrono::milliseconds(std::min(10 * (polls + 1), 200)));
    empty_timer_.async_wait(
        [this, next = std::move(next), polls](const boost::system::error_code& ec) {
            if (!ec) after_empty(next, polls + 1);
        });
}

void Worker::finish_run(const ExitReason& reason) {
    if (!spec_.credentials.empty())
        if (auto r = remove_credentials(ctx_.paths, spec_.name); !r)
            spdlog::warn("{}: {}", spec_.name, r.error().message());
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
    if (ended.policy_then == Then::park) return park(reason, ended);
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

void Worker::park(const ExitReason& reason, const WorkerRun& ended) {
    parked_checkpoint_ = ended.checkpoint_for_park;
    parked_rule_ = ended.policy_rule;
    set_state(WorkerState::parked, WorkerMove::end_run);
    std::string rule = parked_rule_.empty() ? "a policy rule" : "rule '" + parked_rule_ + "'";
    std::vector<std::pair<std::string, std::string>> fields = {{"RULE", parked_rule_},
                                                               {"LAST_EXIT", reason.describe()}};
    std::string checkpointed;
    if (parked_checkpoint_) {
        fields.emplace_back("CHECKPOINT", parked_checkpoint_->path);
        checkpointed = " after checkpoint " + parked_checkpoint_->path +
                       " (checkpointed: its next start restores it)";
    }
    emit(EventKind::parked,
         "parked: " + rule + " ended the run (" + reason.describe() + ") with then: park" +
             checkpointed + "; not restarting until `infervisorctl start " + spec_.name + "`",
         std::move(fields));
}

void Worker::schedule_restart(const RestartVerdict& verdict) {
    set_state(WorkerState::backoff, WorkerMove::end_run);
    emit(EventKind::restarting,
         "restarting in " + format_duration(verdict.delay) + " (attempt " +
             std::to_string(verdict.attempt) + ")",
         {{"DELAY_MS", ms(verdict.delay)}, {"ATTEMPT", std::to_string(verdict.attempt)}});
    room_wait_logged_ = false;
    restart_timer_.expires_after(verdict.delay);
    restart_timer_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec && state_ == WorkerState::backoff) launch_when_room();
    });
}

void Worker::launch_when_room() {
    if (!room_needed_) return launch();
    RoomVerdict room =
        judge_room(*room_needed_, read_meminfo(ctx_.paths.procfs).value_or(MemInfo{}));
    if (room.fits) {
        if (room_wait_logged_)
            spdlog::info("{}: the host has room again ({} available); restarting", spec_.name,
                         human_size(room.available.value_or(0)));
        return launch();
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
    restart_timer_.expires_after(kRoomPoll);
    restart_timer_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec && state_ == WorkerState::backoff) launch_when_room();
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
            restart_timer_.cancel();
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
    watchdog_timer_.cancel();
    start_timer_.cancel();
    if (run_->pidfd) (void)send_signal(run_->pidfd->native_handle(), spec_.stop_signal);
    (void)cgroup().set_frozen(false);  // a frozen worker could not act on the signal
    stop_timer_.expires_after(spec_.stop_timeout);
    stop_timer_.async_wait([this](const boost::system::error_code& ec) {
        if (ec || state_ != WorkerState::stopping || exiting()) return;
        emit(EventKind::stop_escalated,
             "did not stop within " + format_duration(spec_.stop_timeout) + " of " +
                 signal_name(spec_.stop_signal) + "; killing its cgroup",
             {{"STOP_TIMEOUT_MS", ms(spec_.stop_timeout)}});
        (void)cgroup().kill();
    });
}

}  // namespace infervisor

namespace infervisor {

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

Result<void> Worker::checkpoint_now(WorkerCheckpoints::Finished finished) {
    if (!live() || state_ == WorkerState::stopping) return plain_error("not running");
    if (state_ == WorkerState::suspended) return plain_error("suspended; resume it first");
    return checkpoints_.request("infervisorctl", "the worker keeps running", std::move(finished));
}

Result<void> Worker::suspend(std::string trigger, WorkerSuspension::Finished finished) {
    if (state_ == WorkerState::suspended) return plain_error("already suspended");
    if (!live() || (state_ != WorkerState::running && state_ != WorkerState::starting))
        return plain_error("not running");
    // Persisted again once reclaimed: what it will want back, for a daemon
    // that adopts it suspended.
    auto reclaimed = [this, finished = std::move(finished)](const WorkerSuspension::Outcome& o) {
        if (state_ == WorkerState::suspended) persist();
        if (finished) finished(o);
    };
    if (auto r = suspension_.suspend(cgroup(), std::move(trigger), std::move(reclaimed)); !r)
        return r;
    run_->resume_to = state_;
    set_state(WorkerState::suspended, WorkerMove::suspend);
    // A frozen worker sends no WATCHDOG=1 and no READY=1 and answers no
    // probe: not its fault.
    watchdog_timer_.cancel();
    start_timer_.cancel();
    if (probes_) probes_->run_ended();
    return {};
}

Result<void> Worker::resume(std::string trigger, WorkerSuspension::Finished finished) {
    if (state_ != WorkerState::suspended) return plain_error("not suspended");
    return suspension_.resume(std::move(trigger), std::move(finished));
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
    if (state_ == WorkerState::waiting) return waiting_reason_;
    if (state_ == WorkerState::suspended) return suspension_.trigger();
    if (state_ != WorkerState::parked || parked_rule_.empty()) return "";
    std::string reason = "rule '" + parked_rule_ + "'";
    if (const auto& c = parked_checkpoint_) {
        Duration age = std::chrono::floor<std::chrono::seconds>(ctx_.clock.now() - c->written_at);
        reason += "; checkpoint" + (c->bytes ? " of " + human_size(*c->bytes) : std::string()) +
                  " written " + format_duration(std::max(age, Duration(0))) + " ago";
    }
    return reason;
}

}  // namespace infervisor
