// WorkDirMonitor: watches the directories WorkDirManager has prepared —
// their disk usage against workdir_quota, and deletions in them by anyone
// but the worker.
//
// Usage: every scan interval, each work dir whose worker has processes is
// measured (measure_usage) on BackgroundWork, never on the loop: a model dir
// can take seconds to walk. At most one measurement per worker is in flight;
// a tick that finds one still running skips that worker. Crossing the quota
// gives one `workdir-over-quota` event per crossing (QuotaWatch); the figure
// is offered to the policy engine as the metric workdir.usage (fill_sample),
// so that the runaway rules decide what to do about it. A tree too big to
// measure whole (measure_usage's caps: entries, depth, hard links) gives a
// lower bound, which counts as the usage, and one `usage-capped` event, given
// again only after a measurement that was whole.
//
// Deletions: every protected dir (the work dir and protected extra dirs) is
// watched for as long as the worker is prepared, i.e. configured. Where the
// file system reports file handles, through fanotify
// (fanotify_deletion_watcher.h), which names the deleting process: a process
// in the worker's cgroup is the worker itself and is not logged; any other
// (systemd-tmpfiles, an operator's rm) is logged as `protected-entry-deleted`
// with its pid, comm and cgroup. Elsewhere, or where fanotify is unavailable,
// through inotify, which cannot say who: deletions are then logged as "not
// the worker" while the worker has no process, and as "by whom unknown" while
// it runs. Either way at most kDeletionLogBurst entries per worker and minute
// (DeletionLogLimit); the count of the rest is reported.
//
// Contract: inert until start() (no timers, no watches), so that code that
// constructs a Supervisor without a daemon around it sees nothing of it.
// Everything runs on the loop thread except the measurements.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "policy/samples.h"
#include "supervise/background_work.h"
#include "supervise/worker_context.h"
#include "workdir/deleting_process.h"
#include "workdir/deletion_log_limit.h"
#include "workdir/disk_usage.h"
#include "workdir/fanotify_deletion_watcher.h"
#include "workdir/quota_watch.h"

namespace infervisor {

inline constexpr size_t kDeletionLogBurst = 10;
inline constexpr Duration kDeletionLogWindow = std::chrono::minutes(1);
// Buffers of deletion events read per loop turn (16 KiB each, some hundreds
// of events); the rest waits for the next turn.
inline constexpr size_t kDeletionReadsPerTurn = 4;

class WorkDirMonitor {
  public:
    // What the monitor needs to know about a worker right now.
    struct WorkerView {
        bool has_processes = false;
        std::string cgroup;  // as /proc/PID/cgroup names it, e.g. "/x.service/workers/llama"
    };
    // nullopt: no such worker (removed).
    using WorkerLookup = std::function<std::optional<WorkerView>(const std::string& worker)>;

    struct Usage {
        uint64_t bytes = 0;
        ByteLimit quota;
        TimePoint measured_at{};
        bool exact = true;  // false: `bytes` is a lower bound (a cap was reached)
    };

    WorkDirMonitor(WorkerContext& ctx, BackgroundWork& background, WorkerLookup lookup);
    ~WorkDirMonitor();
    WorkDirMonitor(const WorkDirMonitor&) = delete;
    WorkDirMonitor& operator=(const WorkDirMonitor&) = delete;

    // Starts the deletion watches (for workers already prepared, and from now
    // on for every prepare/release) and the usage scans.
    void start(Duration scan_interval);
    void stop();
    void set_scan_interval(Duration interval) { interval_ = interval; }
    // The caps of each measurement (measure_usage's defaults unless a test
    // sets smaller ones).
    void set_usage_limits(const UsageLimits& limits) { limits_ = limits; }

    // The last measurement of the worker's work dir, if any.
    std::optional<Usage> usage(const std::string& worker) const;
    // Sets sample.workdir_usage and sample.workdir_quota from usage().
    void fill_sample(const std::string& worker, WorkerSample& sample) const;

    // Queues a measurement of every running worker's work dir now (the tick
    // does this every scan interval); public for tests.
    void scan_now();
    // Reads and logs the queued deletion events now; public for tests.
    void drain_deletions();

    // Whether fanotify (with the deleter's pid) is used for `worker`'s dirs.
    bool identifies_deleters(const std::string& worker) const;

  private:
    struct Watched {
        QuotaWatch quota;
        std::optional<Usage> usage;
        // The measurement under way, 0 if none. A result whose id is not
        // this one is of a dir since released (and perhaps prepared anew,
        // with another quota): it is dropped.
        uint64_t measuring = 0;
        bool capped = false;  // the last measurement reached a cap (usage-capped given)
    };

    void sync_watches(const std::string& worker);
    void arm_tick();
    void arm_deletion_wait(boost::asio::posix::stream_descriptor& wait);
    void measure(const std::string& worker, const PreparedWorkDir& prepared);
    void on_measured(const std::string& worker, uint64_t measurement,
                     const std::filesystem::path& dir, ByteLimit quota,
                     const Result<TreeUsage>& usage);
    void note_capped(const std::string& worker, Watched& w, const std::filesystem::path& dir,
                     const TreeUsage& usage);
    void on_deletion(const DeletionEvent& event, pid_t pid, bool pid_known);
    // look_up_process, once per pid and drain.
    const DeletingProcess& identify(pid_t pid);
    void flush_suppressed();

    WorkerContext& ctx_;
    BackgroundWork& background_;
    WorkerLookup lookup_;
    Duration interval_ = std::chrono::minutes(1);
    UsageLimits limits_;
    bool running_ = false;
    bool drain_queued_ = false;  // a drain_deletions() turn is posted
    boost::asio::steady_timer tick_;
    std::optional<FanotifyDeletionWatcher> fanotify_;
    std::optional<DeletionWatcher> inotify_;
    std::unique_ptr<boost::asio::posix::stream_descriptor> fanotify_wait_, inotify_wait_;
    std::set<std::string> inotify_owners_;  // workers with at least one dir on inotify
    std::map<std::string, Watched> watched_;
    uint64_t last_measurement_ = 0;
    DeletionLogLimit limit_{kDeletionLogBurst, kDeletionLogWindow};
    TimePoint last_overflow_log_{};
    std::map<pid_t, DeletingProcess> identified_;
    std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace infervisor
