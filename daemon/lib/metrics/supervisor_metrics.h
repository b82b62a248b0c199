// SupervisorMetrics: what the daemon knows about its workers, the host and
// itself, kept between evaluation rounds and rendered as Prometheus text.
// Fed only with what the daemon already has: the samples of each policy
// round (EvaluationRound), the workers' state, restarts and last exit, and
// the policy actions as they are taken. It reads no file itself.
//
// Series (every worker series has the label worker="NAME"):
//   infervisor_worker_memory_bytes, _memory_max_bytes, _memory_high_bytes,
//   _memory_peak_bytes, _swap_bytes, _memory_growth_per_minute_ratio,
//   _pressure_avg10_ratio{resource,kind}, _pressure_stalled_seconds_total
//   {resource,kind}, _memory_events_total{event}, _swapped_in_bytes_total,
//   _swapped_out_bytes_total, _cpu_seconds_total, _pids, _workdir_bytes,
//   _workdir_quota_bytes (while running, from the last round);
//   _restarts_total, _oom_kills_total, _state{state} (one series per state, 1 for the current
//   one), _last_exit_info{reason}, infervisor_policy_actions_total{rule,
//   action} (for every configured worker; host steps with worker="").
//   infervisor_host_*: pressure, swapped in/out bytes, memory available/total.
//   infervisor_daemon_*: cpu seconds, resident memory, loop lag, evaluation
//   time, evaluations, start time.
// Counters restart from 0 when a worker's cgroup is created again (each run)
// or the daemon restarts; Prometheus' rate() handles such resets.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "metrics/evaluation_round.h"
#include "metrics/history_ring.h"

namespace infervisor {

struct WorkerFacts {
    std::string name;
    std::string state;  // state_name()
    uint64_t restarts = 0;
    std::string last_exit;  // ExitReason::describe() of the last run; "" if none
};

struct DaemonStats {
    double cpu_seconds = 0;
    std::optional<uint64_t> resident_bytes;
    double start_time_seconds = 0;  // since the epoch
};

class SupervisorMetrics {
  public:
    explicit SupervisorMetrics(size_t history_points = 1800);

    // Points kept per worker from now on (see HistoryRing).
    void set_history_points(size_t points);
    // The configured workers, in order; history and counters of workers no
    // longer configured are dropped.
    void set_workers(std::vector<WorkerFacts> workers);
    // One round; `realtime_ms` is the wall-clock time of the round.
    void record_round(const EvaluationRound& round, int64_t realtime_ms);
    void record_action(const std::string& worker, const std::string& rule,
                       const std::string& action, bool dry_run, int64_t realtime_ms);

    // A run of the worker ended by an OOM kill (the `oom-killed` event): the
    // cgroup and its memory.events are gone by the next scrape, so the daemon
    // counts these itself.
    void record_oom_kill(const std::string& worker);

    std::string render(const DaemonStats& daemon) const;
    const HistoryRing* history(const std::string& worker) const;
    size_t rounds() const { return rounds_; }

  private:
    struct PerWorker {
        explicit PerWorker(size_t points) : history(points) {}
        std::optional<SampledWorker> last;  // from the newest round, while running
        std::optional<WorkerSample> previous;
        std::map<std::pair<std::string, std::string>, uint64_t> actions;  // (rule, action)
        uint64_t oom_kills = 0;
        HistoryRing history;
    };
    PerWorker& worker(const std::string& name);
    void render_workers(class Exposition& out) const;
    void render_facts(Exposition& out) const;
    void render_host(Exposition& out) const;
    void render_daemon(Exposition& out, const DaemonStats& daemon) const;

    size_t history_points_;
    std::vector<WorkerFacts> facts_;
    std::map<std::string, PerWorker> workers_;
    std::map<std::pair<std::string, std::string>, uint64_t> host_actions_;
    std::optional<HostSample> host_;
    std::chrono::microseconds last_evaluation_{};
    std::chrono::microseconds last_lateness_{};
    std::chrono::microseconds total_lateness_{};
    size_t rounds_ = 0;
};

}  // namespace infervisor
