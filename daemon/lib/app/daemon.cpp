#include "app/daemon.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <iostream>

#include "app/memory_lock.h"
#include "app/reexec.h"
#include "app/service_notify.h"
#include "app/systemd_manager.h"
#include "app/workers_home.h"
#include "base/file_io.h"
#include "base/units.h"
#include "cgroup/cgroup_discovery.h"
#include "config/config_loader.h"
#include "control/control_server.h"
#include "journal/journal_writer.h"
#include "journal/logging.h"
#include "probe/tls_relay.h"
#include "process/fd_limit.h"
#include "services/caps_fit.h"
#include "services/config_load_runner.h"
#include "services/control_service.h"
#include "services/gpu_watch.h"
#include "services/metrics_collector.h"
#include "services/policy_runner.h"
#include "services/service_list.h"
#include "services/shared_tmp_guard.h"
#include "services/userdb_records.h"
#include "services/userdb_server.h"
#include "services/workdir_scans.h"
#include "supervise/supervisor.h"

namespace infervisor {

namespace asio = boost::asio;
namespace fs = std::filesystem;

namespace {

// How often the daemon gives back what its user lookups mapped of the NSS
// modules: a lookup comes with a worker's start, and rarely otherwise.
constexpr std::chrono::seconds kUnlockedCodeRelease{10};

ConfigSource source_of(const DaemonOptions& o) { return {o.config_file, o.workers_dir}; }

void apply_overrides(const DaemonOptions& o, DaemonSettings& d) {
    if (o.log_level) d.log_level = *o.log_level;
    if (o.cgroup_root) d.cgroup_root = *o.cgroup_root;
    if (o.runtime_dir) d.runtime_dir = *o.runtime_dir;
    if (o.state_dir) d.state_dir = *o.state_dir;
}

void notify_systemd(const std::string& state) {
    if (auto sent = notify_service_manager(state); !sent)
        spdlog::warn("cannot notify systemd: {}", sent.error().message());
}

Result<void> make_runtime_dirs(const Paths& paths) {
    for (const fs::path& dir : {paths.runtime_dir, paths.runtime_dir / "notify", paths.state_dir}) {
        std::error_code ec;
        fs::create_directories(dir, ec);
        if (ec) return plain_error("cannot create " + dir.string() + ": " + ec.message());
    }
    ::chmod((paths.runtime_dir / "notify").c_str(), 0755);
    return {};
}

class Daemon {
  public:
    Daemon(const DaemonOptions& options, Config config)
        : options_(options),
          config_(std::move(config)),
          signals_(io_, SIGTERM, SIGINT, SIGHUP),
          watchdog_(io_),
          unlocked_code_timer_(io_) {
        signals_.add(SIGUSR2);
    }

    int run();

  private:
    Result<void> set_up_cgroups();
    bool terminating_for_restart() const;
    void wait_for_signal();
    // Reads and checks the files off the loop, then applies them (unless
    // every request is a preview); `done` (may be empty) gets the outcome. A
    // request while a reload is running waits for one more reload after it
    // (requests meanwhile share it, so a flood of SIGHUPs is one reload).
    void reload(ChangeMode mode, SupervisorApi::ReloadDone done);
    void start_reload();
    // What applying `loaded` would change: its errors, or the workers added,
    // removed and changed and what does not fit the host. Changes nothing.
    ReloadOutcome changes_of(const LoadedConfig& loaded) const;
    void apply_loaded(LoadedConfig loaded, ReloadOutcome& outcome);
    // The services (services/service.h) in the order they start.
    void make_services();
    void shut_down();
    void leave_workers_running();
    void stop_watching();
    void reexec_for_upgrade();
    void keep_watchdog_fed();
    // WATCHDOG=1 now and every `limit` / 6 from now on.
    void feed_watchdog(std::chrono::microseconds limit);
    // Every kUnlockedCodeRelease: what the user lookups mapped of the NSS
    // modules leaves the daemon's RSS again (app/memory_lock.h).
    void release_unlocked_code_now_and_then();

    const DaemonOptions& options_;
    Config config_;
    asio::io_context io_;
    asio::signal_set signals_;
    asio::steady_timer watchdog_;
    asio::steady_timer unlocked_code_timer_;
    std::vector<AddressRange> unlocked_code_;
    SteadyClock clock_{io_};
    EventBus events_;
    Paths paths_;
    std::unique_ptr<CgroupTree> tree_;
    fs::path cgroup_mount_;
    std::unique_ptr<WorkDirManager> workdirs_;
    std::unique_ptr<WorkerContext> ctx_;
    std::unique_ptr<GpuWatch> gpus_;
    std::unique_ptr<Supervisor> supervisor_;
    std::unique_ptr<PolicyRunner> policy_;
    std::unique_ptr<MetricsCollector> metrics_;
    std::unique_ptr<WorkdirScans> workdir_scans_;
    std::unique_ptr<SharedTmpGuard> shared_tmp_;
    std::unique_ptr<ControlService> control_;
    std::unique_ptr<UserDbServer> userdb_;
    ServiceList services_;
    std::string last_status_;
    bool shutting_down_ = false;
    // One background thread for reloads, no deadline: the daemon's own files.
    ConfigLoadRunner reloads_{io_, 1, Duration::zero()};
    struct ReloadRequest {
        ChangeMode mode;
        SupervisorApi::ReloadDone done;
    };
    std::vector<ReloadRequest> waiting_reloads_;  // callers of the next reload
    bool apply_waiting_ = false;                  // the next reload applies (SIGHUP, a caller)
};

Result<void> Daemon::set_up_cgroups() {
    auto mountinfo = read_file(paths_.procfs / "self/mountinfo");
    if (!mountinfo) return mountinfo.error();
    auto mount = find_cgroup2_mount(*mountinfo);
    if (!mount) return mount.error();
    cgroup_mount_ = *mount;
    auto home = find_workers_home(config_.daemon.cgroup_root, cgroup_mount_, paths_);
    if (!home) return home.error();
    tree_ = std::make_unique<CgroupTree>(home->root, home->home);
    spdlog::info("cgroup root {} ({})", home->root.string(),
                 tree_->outlives_daemon()
                     ? "the workers' own unit: they outlive the daemon's process"
                     : "the daemon's: workers end with its unit");
    return tree_->setup(::getpid());
}

// Whether a SIGTERM is systemd stopping our unit for a restart (`systemctl
// restart`): then workers whose cgroups outlive the daemon are left running
// for the next daemon to adopt. Anything else (stop, shutdown, a plain
// kill, no answer) stops them.
bool Daemon::terminating_for_restart() const {
    if (!tree_->outlives_daemon()) return false;
    auto unit = own_systemd_unit(paths_.procfs);
    if (!unit) return false;
    auto state = systemd_unit_state(paths_.unit_state, *unit);
    if (!state) {
        spdlog::warn("SIGTERM: cannot ask systemd whether this is a restart ({}); stopping",
                     state.error().message());
        return false;
    }
    const std::string& job = state->job_type;
    return job == "restart" || job == "try-restart" || job == "reload-or-restart" ||
           job == "reload-or-try-restart";
}

int Daemon::run() {
    if (auto locked = lock_own_memory()) {
        spdlog::info(
            "memory locked: the daemon's code ({} KiB) is pinned in RAM, what else it "
            "uses is pinned as it is used (mlockall, MCL_ONFAULT; {} KiB of read-only file "
            "mappings unmapped first)",
            locked->own_code_bytes >> 10, locked->dropped_bytes >> 10);
        unlocked_code_ = std::move(locked->unlocked_code);
    } else
        spdlog::warn("cannot lock the daemon's memory, so it may stall when the host thrashes: {}",
                     locked.error().message());
    paths_.runtime_dir = config_.daemon.runtime_dir;
    paths_.state_dir = config_.daemon.state_dir;
    if (!options_.nvml_library.empty()) paths_.nvml_library = options_.nvml_library;
    if (!options_.cuda_library.empty()) paths_.cuda_library = options_.cuda_library;
    if (!options_.tls_relay.empty()) paths_.tls_relay = options_.tls_relay;
    set_tls_relay_program(paths_.tls_relay);  // before the first https exchange
    if (auto r = make_runtime_dirs(paths_); !r) {
        spdlog::critical("{}", r.error().message());
        return 1;
    }
    if (auto r = set_up_cgroups(); !r) {
        spdlog::critical("cannot set up cgroups: {}", r.error().message());
        notify_systemd("STATUS=failed: " + r.error().message().substr(0, 200));
        return 1;
    }
    JournalWriter journal(stderr_is_journal());
    events_.subscribe([journal](const Event& e) { journal.write(e); });
    workdirs_ = std::make_unique<WorkDirManager>(paths_);
    if (auto r = workdirs_->write_tmpfiles_exclusions(); !r)
        spdlog::warn("tmpfiles exclusions: {}", r.error().message());
    ctx_ = std::make_unique<WorkerContext>(WorkerContext{io_, *tree_, cgroup_mount_, paths_,
                                                         events_, *workdirs_, clock_,
                                                         stderr_is_journal(), apply_limits});
    gpus_ = std::make_unique<GpuWatch>(io_, paths_, clock_, &events_);
    ctx_->gpu_devices = [this] { return gpus_->devices_for_start(); };
    // A suspension asks right when it begins; the policy refreshes the
    // reading every interval, and a minute-old one still tells whether the
    // worker uses CUDA at all.
    ctx_->nvidia_memory_of = [this](const std::string& cgroup) {
        return gpus_->memory_on(cgroup, "nvidia", std::chrono::minutes(1));
    };
    gpus_->refresh({}, Duration::zero());  // opens the sources in the background
    supervisor_ = std::make_unique<Supervisor>(*ctx_);
    events_.subscribe([this](const Event&) {
        std::string status = "STATUS=" + supervisor_->summary();
        if (status != last_status_) notify_systemd(last_status_ = status);
    });
    make_services();
    services_.configure(config_);
    ReexecOrigin origin = reexec_origin();
    if (origin.reexecuted) {
        spdlog::warn("re-executed in place ({}; {} quick re-execution(s)): adopting the workers",
                     origin.reason, origin.count);
    } else if (!tree_->outlives_daemon()) {
        // A fresh start by systemd with the workers in the daemon's own
        // cgroup: its KillMode=mixed ended every worker of an earlier run,
        // so nothing is to be adopted; leftovers are reaped.
        std::error_code ec;
        fs::remove_all(paths_.runtime_dir / "state", ec);
    } else if (!tree_->existing_workers().empty()) {
        spdlog::warn("workers of an earlier daemon are still running: adopting them");
    }
    supervisor_->restore_drain();  // a drain outlives the daemon (drain_record.h)
    supervisor_->adopt_leftovers(config_);
    supervisor_->apply(config_);
    services_.start();
    events_.emit(Event{EventKind::daemon_started, "",
                       "infervisord " INFERVISOR_VERSION " supervising " +
                           std::to_string(config_.workers.size()) + " worker(s)"});
    wait_for_signal();
    keep_watchdog_fed();
    release_unlocked_code_now_and_then();
    notify_systemd("READY=1\nSTATUS=" + supervisor_->summary());
    try {
        io_.run();
    } catch (const std::exception& e) {
        // A bug, not a condition to live with: say what it was, and start
        // afresh in place, adopting the workers (reexec.h); past the
        // crash-loop limit, let systemd restart the daemon (Restart=on-failure).
        spdlog::critical("internal error: {}; re-executing in place", e.what());
        notify_systemd(std::string("STATUS=internal error: ") + e.what());
        std::string why = reexec_now("internal-error");
        spdlog::critical("cannot re-execute ({}); exiting", why);
        return 1;
    }
    return 0;
}

void Daemon::wait_for_signal() {
    signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
        if (ec) return;
        if (sig == SIGHUP)
            reload(ChangeMode::apply, {});
        else if (sig == SIGUSR2)
            reexec_for_upgrade();
        else
            shut_down();
        if (!shutting_down_) wait_for_signal();
    });
}

void Daemon::reload(ChangeMode mode, SupervisorApi::ReloadDone done) {
    if (mode == ChangeMode::apply) apply_waiting_ = true;
    if (done) waiting_reloads_.push_back({mode, std::move(done)});
    if (!reloads_.running()) start_reload();
}

void Daemon::start_reload() {
    bool apply = std::exchange(apply_waiting_, false);
    auto waiting = std::exchange(waiting_reloads_, {});
    if (apply) {
        uint64_t now_usec =
            static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                      std::chrono::steady_clock::now().time_since_epoch())
                                      .count());
        notify_systemd("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(now_usec));
    }
    auto job = [source = source_of(options_)] { return load_config(source); };
    reloads_.run(
        job, [this, apply, waiting](ConfigLoadRunner::Status, std::optional<LoadedConfig> loaded) {
            if (shutting_down_) return;
            apply_overrides(options_, loaded->config.daemon);
            ReloadOutcome outcome = changes_of(*loaded);
            ReloadOutcome preview = outcome;
            if (apply) apply_loaded(std::move(*loaded), outcome);
            for (const auto& request : waiting)
                request.done(request.mode == ChangeMode::apply ? outcome : preview);
            if (apply_waiting_ || !waiting_reloads_.empty()) start_reload();
        });
}

ReloadOutcome Daemon::changes_of(const LoadedConfig& loaded) const {
    ReloadOutcome outcome;
    if (!loaded.ok()) {
        outcome.errors = loaded.errors.lines();
        return outcome;
    }
    outcome.valid = true;
    if (!(loaded.config.daemon == config_.daemon))
        outcome.warnings.push_back(
            "daemon settings changed; paths and cgroup_root take effect on restart");
    for (auto& warning : loaded.errors.warning_lines())
        outcome.warnings.push_back(std::move(warning));
    for (auto& warning : host_fit_warnings(loaded.config, paths_.procfs))
        outcome.warnings.push_back(std::move(warning));
    for (const auto& w : loaded.config.workers) {
        const WorkerSpec* old = config_.find(w.name);
        if (!old)
            outcome.added.push_back(w.name);
        else if (!(*old == w))
            outcome.changed.push_back(w.name);
    }
    for (const auto& w : config_.workers)
        if (!loaded.config.find(w.name)) outcome.removed.push_back(w.name);
    return outcome;
}

void Daemon::apply_loaded(LoadedConfig loaded, ReloadOutcome& outcome) {
    if (!outcome.valid) {
        for (const auto& e : outcome.errors) spdlog::error("{}", e);
        events_.emit(Event{EventKind::config_rejected,
                           "",
                           "new configuration rejected (" + std::to_string(loaded.errors.count()) +
                               " error(s)); the running configuration stays",
                           {{"ERRORS", loaded.errors.format()}}});
    } else {
        for (const auto& warning : outcome.warnings) spdlog::warn("{}", warning);
        outcome.applied = true;
        config_ = std::move(loaded.config);
        services_.configure(config_);
        supervisor_->apply(config_);
        events_.emit(Event{
            EventKind::config_reloaded, "",
            "configuration reloaded: " + std::to_string(config_.workers.size()) + " worker(s)"});
    }
    notify_systemd("READY=1\nSTATUS=" + supervisor_->summary());
}

// The most trace bytes one Trace reply carries (a few blocks; base64 adds a
// third), well under the client's reply bound.
constexpr size_t kTraceChunkBytes = 512u << 10;

void Daemon::make_services() {
    policy_ = std::make_unique<PolicyRunner>(*ctx_, *supervisor_);
    policy_->set_gpu_watch(gpus_.get());
    metrics_ = std::make_unique<MetricsCollector>(*ctx_, *supervisor_, *policy_);
    workdir_scans_ = std::make_unique<WorkdirScans>(*supervisor_);
    shared_tmp_ = std::make_unique<SharedTmpGuard>(*ctx_, *supervisor_);
    control_ = std::make_unique<ControlService>(
        *ctx_, *supervisor_,
        [this](ChangeMode mode, SupervisorApi::ReloadDone done) { reload(mode, std::move(done)); },
        [this](uint64_t from) { return policy_->trace().read(from, kTraceChunkBytes); });
    userdb_ = std::make_unique<UserDbServer>(io_, paths_);
    for (Service* s :
         std::initializer_list<Service*>{policy_.get(), metrics_.get(), workdir_scans_.get(),
                                         shared_tmp_.get(), control_.get(), userdb_.get()})
        services_.add(*s);
}

// Ends everything the daemon does besides its workers' runs: policy,
// metrics, scans, the control and userdb sockets (for an end of the daemon).
void Daemon::stop_watching() { services_.stop(); }

// `systemctl restart`: end this process and nothing else. The workers' state
// files stay (RuntimeDirectoryPreserve=restart) and so do their cgroups, in
// the workers' own unit; the next daemon adopts them (supervise/adoption.h).
void Daemon::leave_workers_running() {
    shutting_down_ = true;
    spdlog::info("SIGTERM for a restart: {} keep running, for the next daemon to adopt",
                 supervisor_->summary());
    notify_systemd("STOPPING=1\nSTATUS=restarting; workers keep running");
    stop_watching();
    signals_.cancel();
    watchdog_.cancel();
    unlocked_code_timer_.cancel();
    io_.stop();
}

// SIGUSR2: the binary now at our path takes over, workers and all (reexec.h).
void Daemon::reexec_for_upgrade() {
    if (shutting_down_) return;
    spdlog::info("SIGUSR2: re-executing in place; {} keep running", supervisor_->summary());
    notify_systemd("STATUS=re-executing; workers keep running");
    services_.stop();
    std::string why = reexec_now("upgrade");
    // Still here: carry on as before.
    spdlog::error("cannot re-execute: {}; carrying on", why);
    services_.start();
    notify_systemd("STATUS=" + supervisor_->summary());
}

void Daemon::shut_down() {
    if (shutting_down_) return;
    if (terminating_for_restart()) return leave_workers_running();
    shutting_down_ = true;
    notify_systemd("STOPPING=1\nSTATUS=stopping workers");
    events_.emit(Event{EventKind::daemon_stopping, "", "stopping all workers"});
    stop_watching();
    supervisor_->stop_all([this] {
        signals_.cancel();
        watchdog_.cancel();
        unlocked_code_timer_.cancel();
        // Idle workers still watch their notify sockets; nothing else is pending.
        io_.stop();
    });
}

// Fed six times per WatchdogSec rather than the customary two, so that a
// stall has to last nearly the whole WatchdogSec, not half of it, before
// systemd kills the daemon (and with it every worker). A feed that comes
// late by more than its interval means something blocked the loop: that is
// logged, since it is a bug and the next one may be the watchdog's kill.
void Daemon::keep_watchdog_fed() {
    if (auto watchdog = service_watchdog_interval()) feed_watchdog(*watchdog);
}

void Daemon::feed_watchdog(std::chrono::microseconds limit) {
    notify_systemd("WATCHDOG=1");
    auto interval = limit / 6;
    auto due = std::chrono::steady_clock::now() + interval;
    watchdog_.expires_at(due);
    watchdog_.async_wait([this, due, interval, limit](const boost::system::error_code& ec) {
        if (ec) return;
        auto late = std::chrono::steady_clock::now() - due;
        if (late > interval)
            spdlog::warn(
                "the event loop was blocked for about {} (systemd's watchdog kills the daemon "
                "after {})",
                format_duration(std::chrono::duration_cast<Duration>(late)),
                format_duration(std::chrono::duration_cast<Duration>(limit)));
        feed_watchdog(limit);
    });
}

void Daemon::release_unlocked_code_now_and_then() {
    if (unlocked_code_.empty()) return;
    release_unlocked_code(unlocked_code_);
    unlocked_code_timer_.expires_after(kUnlockedCodeRelease);
    unlocked_code_timer_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec) release_unlocked_code_now_and_then();
    });
}

}  // namespace

int check_config(const DaemonOptions& options) {
    auto loaded = load_config(source_of(options));
    if (!loaded.ok()) {
        std::cerr << loaded.errors.format();
        for (const auto& warning : loaded.errors.warning_lines())
            std::cerr << "warning: " << warning << "\n";
        std::cerr << loaded.errors.count() << " error(s); configuration is invalid\n";
        return 1;
    }
    for (const auto& warning : loaded.errors.warning_lines())
        std::cout << "warning: " << warning << "\n";
    for (const auto& warning : host_fit_warnings(loaded.config, Paths{}.procfs))
        std::cout << "warning: " << warning << "\n";
    std::cout << "configuration OK: " << loaded.config.workers.size() << " worker(s) from "
              << loaded.config.files.size() << " file(s)\n";
    return 0;
}

int run_daemon(const DaemonOptions& options) {
    // Our own NSS lookups must not ask our own userdb server: it would wait
    // for itself (services/userdb_server.h).
    ::setenv("SYSTEMD_BYPASS_USERDB", kUserDbService, 1);
    auto loaded = load_config(source_of(options));
    apply_overrides(options, loaded.config.daemon);
    setup_logging(loaded.config.daemon.log_level, stderr_is_journal(), "infervisord");
    if (!loaded.ok()) {
        for (const auto& e : loaded.errors.lines()) spdlog::critical("{}", e);
        spdlog::critical("invalid configuration ({} error(s)); not starting",
                         loaded.errors.count());
        notify_systemd("STATUS=invalid configuration; see the journal");
        return 1;
    }
    ::signal(SIGPIPE, SIG_IGN);
    raise_fd_limit();
    for (const auto& warning : loaded.errors.warning_lines()) spdlog::warn("{}", warning);
    for (const auto& warning : host_fit_warnings(loaded.config, Paths{}.procfs))
        spdlog::warn("{}", warning);
    prepare_reexec();
    Daemon daemon(options, std::move(loaded.config));
    return daemon.run();
}

}  // namespace infervisor
