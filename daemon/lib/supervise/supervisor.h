// Supervisor: the set of workers, kept in line with the configuration.
//
// Contract: apply() makes the running set match a validated Config — new
// workers start, removed ones stop (their cgroups removed), workers whose spec
// changed restart with the new spec, unchanged ones are not touched. It may be
// called again while earlier changes are still stopping workers; the latest
// configuration wins. Runs on the event loop thread.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "config/daemon_config.h"
#include "supervise/admission_queue.h"
#include "supervise/background_work.h"
#include "supervise/config_snapshot.h"
#include "supervise/uid_leftovers.h"
#include "supervise/workdir_monitor.h"
#include "supervise/worker.h"

namespace infervisor {

class Supervisor {
  public:
    explicit Supervisor(WorkerContext& ctx);
    ~Supervisor();

    // Takes over what an earlier daemon left (adoption.h): runs whose main
    // process lives are adopted, runs that ended unwatched are wound up and
    // restarted by policy, states (parked, failed...) and restart counters
    // carry over, and cgroups nothing explains are killed and removed
    // (leftover-reaped), so that every configured worker then runs exactly
    // once. Workers no longer configured, or whose spec changed, are left for
    // the apply(config) that must follow to stop or restart, as a reload
    // would. Blocking (it waits for reaped cgroups to empty); call once at
    // start-up, before apply().
    void adopt_leftovers(const Config& config);

    // Also records the configuration's snapshot (config_snapshot.h) for the
    // workers' state files.
    void apply(const Config& config);

    // Stops every worker; `done` runs when all are down. Their state files go
    // too: the next daemon starts afresh. A llama-server worker's slots are
    // saved first (Worker::stop_saving_slots), for at most
    // kSaveBeforeDaemonStop.
    void stop_all(std::function<void()> done);
    static constexpr Duration kSaveBeforeDaemonStop = std::chrono::minutes(1);

    // Maintenance (infervisorctl drain): from now on no run is launched (an
    // operator's start is refused, a restart does not happen, a worker added
    // by a reload stays stopped), and every worker is brought down the
    // gentlest way its own method allows (Worker::drain_stop), all at once.
    // `done` runs once all are down, with what happened to each worker that
    // was up. The drain is recorded (drain_record.h): a daemon restarted
    // meanwhile stays drained; a reboot ends it. A drain while drained brings
    // down whatever is up again and keeps the first drain's names.
    struct DrainStep {
        std::string worker;
        std::string how;  // "checkpointed, then stopped", "stopped", ...
    };
    using DrainDone = std::function<void(std::vector<DrainStep>)>;
    void drain(DrainDone done);
    // Ends a drain: launches are allowed again and the workers that were up
    // when it began (and are still configured) are started. Their names;
    // empty when nothing was drained.
    std::vector<std::string> undrain();
    bool drained() const { return drained_; }
    // Reads the drain record at start-up (before apply()): a daemon that
    // finds one starts drained. A damaged record counts as drained with no
    // names, and is logged.
    void restore_drain();

    Worker* find(const std::string& name);
    std::vector<const Worker*> workers() const;
    // "3 workers: 2 running, 1 failed", for STATUS= and logs.
    std::string summary() const;

    // Usage and deletion watching of the workers' directories; inert until
    // the daemon start()s it.
    WorkDirMonitor& workdir_monitor() { return monitor_; }
    const WorkDirMonitor& workdir_monitor() const { return monitor_; }

    struct WorkDirRemoval {
        std::filesystem::path path;
        bool existed = false;
        UidCleanup cleanup;  // for a worker with a uid of its own
    };
    using RemovalDone = std::function<void(Result<WorkDirRemoval>)>;
    // Deletes the work dir of a worker that is no longer configured
    // (WorkDirManager's symlink-safe removal, on BackgroundWork). Which dir:
    // the one of the worker's last spec, if it was removed since the daemon
    // started, else the default <state_dir>/workers/NAME. Refused while a
    // worker of that name is configured, running or stopping, or its dir is
    // still prepared. A configuration that brings the worker back while the
    // removal runs starts it once the removal is done. `done` runs on the loop.
    // A preview makes the same checks and says which dir and whether it
    // exists, and deletes nothing (for infervisorctl's prompt).
    enum class RemovalMode { remove, preview };
    void remove_workdir(const std::string& name, RemovalMode mode, RemovalDone done);

  private:
    void reap_leftover(const std::string& name);
    void reap_leftover_probes();
    void adopt_one(const std::string& name, const Config& config);
    void retire(const std::string& name);
    void create_and_start(const WorkerSpec& spec);
    // Drops the worker's locks and tmpfiles exclusions; removes its work dir
    // when configured to (the worker is stopped by then).
    void release_workdir(const WorkerSpec& spec);
    void start_removal(const WorkerSpec& spec, uid_t uid, RemovalDone done);
    void preview_removal(const WorkerSpec& spec, RemovalDone done);
    // Which configured or prepared worker directory `dir` is, contains or lies
    // in ("worker 'b' work dir /srv/llama"), if any: such a dir is never removed,
    // whatever name it was asked for under (a renamed worker keeps its dir).
    std::optional<std::string> dir_in_use(const std::filesystem::path& dir) const;
    // Frees a removed worker's own uid once `cleanup` says nothing it owned
    // is left; else it stays reserved (journaled with what is left).
    void release_uid(const std::string& name, uid_t uid, const UidCleanup& cleanup);
    std::optional<WorkDirMonitor::WorkerView> view_of(const std::string& name) const;
    std::vector<Worker*> configured_workers();  // for the admission queue

    WorkerContext& ctx_;
    std::map<std::string, WorkerSpec> desired_;
    std::map<std::string, std::unique_ptr<Worker>> workers_;
    std::map<std::string, std::unique_ptr<Worker>> retiring_;
    // Workers removed from the configuration since start-up: whose work dir
    // remove_workdir() means.
    std::map<std::string, WorkerSpec> removed_;
    std::set<std::string> removing_;  // work dir removals in flight
    bool stopping_all_ = false;
    bool drained_ = false;
    std::vector<std::string> drained_were_up_;  // as in the drain record
    ConfigSnapshots snapshots_;
    std::string snapshot_id_;  // of the configuration last applied
    // Last: destroyed first, while the workers they look at still exist.
    BackgroundWork background_;
    WorkDirMonitor monitor_;
    AdmissionQueue admission_;  // memory.reserve: starts waiting workers when they fit
};

}  // namespace infervisor
