// Worker: what a run says and fails to say while it lives: its notify
// messages (READY=1 ends its loading, WATCHDOG=1, STATUS=, CHECKPOINT=1), its
// probes' verdicts, the heartbeat watchdog and the start timeout.
#include <fcntl.h>
#include <spdlog/spdlog.h>

#include "base/units.h"
#include "notify/notify_message.h"
#include "process/pidfd.h"
#include "supervise/worker.h"

namespace infervisor {

namespace asio = boost::asio;

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
        last_rejected_notify_ = why;
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
    if (!process_in_cgroup(ctx_.paths.procfs, d.pid, cgroup_in_mount())) {
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
    if (msg->has("WATCHDOG", "1")) on_heartbeat();
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
    start_timer_->cancel();
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

void Worker::on_heartbeat() {
    TimePoint now = ctx_.clock.now();
    run_->last_heartbeat = now;
    if (spec_.watchdog.count() <= 0 && spec_.learn_watchdog) {
        bool was_armed = run_->learned_watchdog.armed();
        auto timeout = run_->learned_watchdog.on_heartbeat(now);
        if (timeout && !was_armed)
            emit(EventKind::watchdog_learned,
                 "sends WATCHDOG=1 on its own (at most " +
                     format_duration(run_->learned_watchdog.longest_interval()) +
                     " apart): held to it, a run without one for " + format_duration(*timeout) +
                     " is ended (`watchdog: 0s` turns this off)",
                 {{"WATCHDOG_MS", milliseconds_text(*timeout)},
                  {"HEARTBEAT_INTERVAL_MS",
                   milliseconds_text(run_->learned_watchdog.longest_interval())}});
    }
    arm_watchdog();
}

std::optional<Duration> Worker::watchdog_timeout() const {
    if (spec_.watchdog.count() > 0) return spec_.watchdog;
    if (run_ && run_->learned_watchdog.armed()) return run_->learned_watchdog.timeout();
    return std::nullopt;
}

void Worker::arm_watchdog() {
    auto timeout = watchdog_timeout();
    if (!timeout || main_pid() == 0) return;
    watchdog_timer_->arm(*timeout, [this] { on_watchdog_expired(); });
}

void Worker::on_watchdog_expired() {
    if (!live() || state_ == WorkerState::stopping || state_ == WorkerState::suspended) return;
    auto timeout = watchdog_timeout();
    if (!timeout) return;
    bool learned = spec_.watchdog.count() <= 0;
    run_->killed_by_policy = true;
    emit(EventKind::policy_action,
         "watchdog: no WATCHDOG=1 for " + format_duration(*timeout) +
             (learned ? " (the pace it had shown)" : "") + "; killing the worker",
         {{"RULE", learned ? "learned-watchdog" : "watchdog"},
          {"ACTION", "kill"},
          {"THEN", "worker_policy"},
          {"DRY_RUN", "0"},
          {"RESULT", "done"},
          {"WATCHDOG_MS", milliseconds_text(*timeout)}});
    if (auto r = cgroup().kill(); !r) spdlog::error("{}: {}", spec_.name, r.error().message());
}

void Worker::arm_start_timeout() {
    if (!loading_gated() || spec_.start_timeout.count() <= 0 || main_pid() == 0) return;
    start_timer_->arm(spec_.start_timeout, [this] { on_start_timeout(); });
}

void Worker::on_start_timeout() {
    // A policy kill already under way keeps its own reason.
    if (!live() || run_->killed_by_policy || state_ != WorkerState::starting) return;
    run_->start_timed_out = true;
    emit(EventKind::start_failed,
         "no " + awaited_signal() + " within " + format_duration(spec_.start_timeout) +
             "; killing its cgroup",
         {{"PID", std::to_string(run_->pid)},
          {"START_TIMEOUT_MS", milliseconds_text(spec_.start_timeout)}});
    if (auto r = cgroup().kill(); !r) spdlog::error("{}: {}", spec_.name, r.error().message());
}

}  // namespace infervisor
