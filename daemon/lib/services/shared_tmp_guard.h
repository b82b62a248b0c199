// SharedTmpGuard: protects what a worker that shares the host's /tmp
// (private_tmp: false, a criu worker, or one whose dirs lie under /tmp)
// holds open or mapped under /tmp and /var/tmp from systemd-tmpfiles aging,
// for as long as its run lasts.
//
// Every interval (the policy's sample_interval) the processes of each such
// worker with a run (at most ScanLimits::max_pids of its cgroup.procs) are
// scanned (open_tmp_files.h) on a background thread of the guard's own —
// never on the loop: a worker with many fds or mappings costs the scan its
// caps, and nothing else waits for it. A round reads at most
// kRoundBudgetWorkers workers' worth of fds and maps bytes in all, starting
// with another worker each round. At most one scan is in flight; a tick
// that finds one still running is skipped. Measured (open-tmp-scan-bench):
// about 0.4 ms for a worker holding 64 files, 15-25 ms for one at the caps
// (1024 fds, 1 MB of maps from 8000 mappings: the kernel's cost of maps). Back on the loop, the
// paths of a worker whose run is still the one scanned are added to TmpFileProtection (x lines in
// /run/tmpfiles.d/infervisor-open-files.conf); each newly protected path is one
// `tmp-file-protected` event naming it, the pid and how it was held. A worker over the caps is
// logged once per run.
//
// Released when the run ends (its `exited` event) or when the worker is gone
// (checked each tick), and the file rewritten. A daemon that starts (also
// re-executed, adopting running workers) keeps the file an earlier one left
// until its first scan, which it runs at start(), replaces it: what adopted
// runs still hold stays protected without a gap (and is journaled again),
// what they held before and no longer hold, or what ended runs held, is not.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "services/service.h"
#include "supervise/background_work.h"
#include "supervise/supervisor.h"
#include "supervise/worker_context.h"
#include "workdir/open_tmp_files.h"
#include "workdir/tmp_file_protection.h"

namespace infervisor {

class SharedTmpGuard final : public Service {
  public:
    // Per round, the fds and maps bytes of this many workers at their caps.
    static constexpr size_t kRoundBudgetWorkers = 8;

    SharedTmpGuard(WorkerContext& ctx, Supervisor& supervisor, ScanLimits limits = {});
    ~SharedTmpGuard();
    SharedTmpGuard(const SharedTmpGuard&) = delete;
    SharedTmpGuard& operator=(const SharedTmpGuard&) = delete;

    std::string_view name() const override { return "shared-tmp guard"; }
    // Its interval: the configuration's sample_interval.
    void configure(const Config& config) override;
    // Scans at once, then every interval.
    void start() override;
    void stop() override;

    // Queues a scan of every worker that may share the host's /tmp now
    // (unless one is in flight); `done` runs on the loop once its results
    // are applied (tests).
    void scan_now(std::function<void()> done = {});
    // Scans completed so far.
    size_t scans() const { return scans_; }

    const TmpFileProtection& protection() const { return protection_; }

  private:
    struct Target {
        std::string worker;
        std::filesystem::path cgroup;  // its cgroup directory
        std::optional<TimePoint> run;  // started_at(): which run was scanned
    };
    struct ScanResult {
        Target target;
        OpenTmpFileScan scan;
    };

    void arm_tick();
    void on_event(const Event& e);
    std::vector<Target> targets();
    // Whether this run of the worker shares the host's /tmp.
    bool shares_tmp(const Worker& worker);
    void apply(const ScanResult& result);
    void release(const std::string& worker);
    void drop_gone_workers();
    void write();

    WorkerContext& ctx_;
    Supervisor& supervisor_;
    ScanLimits limits_;
    std::string mount_ns_;  // the daemon's: only processes in it see its /tmp
    TmpFileProtection protection_;
    Duration interval_ = std::chrono::seconds(2);
    bool running_ = false;
    bool scanning_ = false;
    size_t scans_ = 0;
    std::set<std::string> warned_;  // workers told about the caps this run
    // shares_host_tmp() of each worker's run, judged once per run (by its
    // started_at), not at every tick: it resolves the work dir's paths, a
    // twentieth of the idle daemon's CPU with 20 workers (issue 28).
    struct Sharing {
        std::optional<TimePoint> run;
        bool shares = false;
    };
    std::map<std::string, Sharing> sharing_;
    std::string last_write_error_;
    boost::asio::steady_timer tick_;
    EventBus::SinkId subscription_ = 0;
    std::shared_ptr<char> alive_ = std::make_shared<char>();
    // Last: destroyed first, so no result arrives for a guard half gone.
    BackgroundWork background_;
};

}  // namespace infervisor
