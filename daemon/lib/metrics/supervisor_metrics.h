// SupervisorMetrics: what the daemon knows about its workers, the host and
// itself, kept between evaluation rounds and rendered as Prometheus text.
// Fed only with what the daemon already has: the samples of each policy
// round (EvaluationRound), the workers' views (view/worker_view.h: state,
// restarts, last exit), and the policy actions as they are taken. It reads
// no file itself.
//
// Series (every worker series has the label worker="NAME"):
//   infervisor_worker_memory_bytes, _memory_max_bytes, _memory_high_bytes,
//   _memory_peak_bytes, _swap_bytes, _memory_growth_per_minute_ratio,
//   _pressure_avg10_ratio{resource,kind}, _pressure_stalled_seconds_total
//   {resource,kind}, _memory_events_total{event}, _swapped_in_bytes_total,
//   _swapped_out_bytes_total, _cpu_seconds_total, _pids, _workdir_bytes,
//   _workdir_quota_bytes (while running, from the last round);
//   _restarts_total, _oom_kills_total, _state{state} (one series per state
//   of kShownStates, 1 for the current one), _last_exit_info{reason},
//   infervisor_policy_actions_total{rule, action} (for every configured
//   worker; host steps with worker="").
//   From a worker's first checkpoint (written, failed or restored) on:
//   _checkpoints_total{result=written|failed}, _checkpoint_duration_seconds
//   (summary: request to published), _last_checkpoint_bytes,
//   _last_checkpoint_timestamp_seconds, _checkpoint_restores_total{result=
//   restored|failed}, _checkpoint_restore_duration_seconds (summary: start to
//   ready). From its first suspension on: _suspensions_total, _resumes_total,
//   _suspended_seconds_total (added when it is resumed),
//   _suspend_reclaimed_bytes_total. From its first wait for admission
//   (memory.reserve) on: _admission_waits_total, _admissions_total{how=
//   fit|overcommit}, _admission_wait_seconds (summary: the waits that ended
//   in an admission); how many wait now is _state{state="waiting"}.
//   Where the host's GPUs are read (the round has them, fresh), per running
//   worker: _gpu_memory_bytes, _gpu_memory_max_bytes (its gpu.memory_max),
//   _gpu_utilization_ratio, and per device it holds memory on
//   _gpu_device_memory_bytes{device}.
//   infervisor_host_*: pressure, swapped in/out bytes, memory available/total.
//   infervisor_gpu_* (label device="0000:03:00.0", the PCI address), for the
//   GPUs of the last round only: _info{index,vendor,name,uuid} (always 1),
//   _memory_total_bytes, _memory_used_bytes, _utilization_ratio, _fault (1
//   when the device cannot be used). None of these families without GPUs.
//   infervisor_gpu_xid_errors_total{device,xid}: NVIDIA Xid events since the
//   daemon started (services/gpu_watch.h); absent until the first one.
//   infervisor_daemon_*: cpu seconds, resident memory, loop lag, evaluation
//   time, evaluations, start time.
// Counters restart from 0 when a worker's cgroup is created again (each run)
// or the daemon restarts; Prometheus' rate() handles such resets.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/evaluation_round.h"
#include "view/worker_view.h"

namespace infervisor {

// What the checkpoint-* events of one worker said, since the daemon started.
struct CheckpointCounts {
    uint64_t written = 0;
    uint64_t failed = 0;
    uint64_t timed = 0;  // written ones that were requested (they have a duration)
    double seconds = 0;  // the sum of those durations
    std::optional<uint64_t> last_bytes;
    std::optional<double> last_time_seconds;  // when the last one was written, since the epoch
    uint64_t restored = 0;
    uint64_t restore_failed = 0;
    uint64_t restores_timed = 0;
    double restore_seconds = 0;
};

// What the suspended/resumed events of one worker said, since the daemon started.
struct SuspensionCounts {
    uint64_t suspended = 0;
    uint64_t resumed = 0;
    double suspended_seconds = 0;  // of the suspensions that ended in a resume
    uint64_t reclaimed_bytes = 0;
};

// What the waiting/admitted events of one worker said, since the daemon started.
struct AdmissionCounts {
    uint64_t waits = 0;         // times it waited instead of starting
    uint64_t fit = 0;           // admitted once it fitted
    uint64_t overcommit = 0;    // started although it did not fit (admission: overcommit)
    uint64_t timed = 0;         // admissions that ended a wait (they have a duration)
    double waited_seconds = 0;  // the sum of those waits
};

struct DaemonStats {
    double cpu_seconds = 0;
    std::optional<uint64_t> resident_bytes;
    double start_time_seconds = 0;  // since the epoch
};

class SupervisorMetrics {
  public:
    // The configured workers, in order, as they look now (their name, state,
    // restarts and last exit are rendered; their use comes from the rounds);
    // counters of workers no longer configured are dropped.
    void set_workers(std::vector<WorkerView> workers);
    // One round: the workers' and the host's use as the rules saw it.
    void record_round(const EvaluationRound& round);
    // A policy action (counted per worker, rule and action).
    void record_action(const std::string& worker, const std::string& rule,
                       const std::string& action);

    // A run of the worker ended by an OOM kill (the `oom-killed` event): the
    // cgroup and its memory.events are gone by the next scrape, so the daemon
    // counts these itself.
    void record_oom_kill(const std::string& worker);

    // A checkpoint was written (with the seconds from its request, when it
    // was requested, and its size when measured) or failed.
    void record_checkpoint(const std::string& worker, bool written, std::optional<double> seconds,
                           std::optional<uint64_t> bytes, int64_t realtime_ms);
    // A run restored from a checkpoint became ready (with the seconds it
    // took), or the restore failed.
    void record_restore(const std::string& worker, bool restored, std::optional<double> seconds);
    void record_suspension(const std::string& worker, std::optional<uint64_t> reclaimed_bytes);
    void record_resume(const std::string& worker, std::optional<double> suspended_seconds);
    // The worker waits instead of starting (its memory.reserve does not fit).
    void record_admission_wait(const std::string& worker);
    // It was admitted: it fits now (`overcommit` false) or starts without
    // room; `waited_seconds` when the admission ended a wait.
    void record_admission(const std::string& worker, bool overcommit,
                          std::optional<double> waited_seconds);
    // memory.peak and pids.current of a running worker, read when the text is
    // rendered rather than every round (only the metrics show them).
    void set_extras(const std::string& worker, std::optional<uint64_t> memory_peak,
                    std::optional<uint64_t> pids_current);

    std::string render(const DaemonStats& daemon) const;
    size_t rounds() const { return rounds_; }

  private:
    struct PerWorker {
        std::optional<SampledWorker> last;  // from the newest round, while running
        std::map<std::pair<std::string, std::string>, uint64_t> actions;  // (rule, action)
        uint64_t oom_kills = 0;
        std::optional<CheckpointCounts> checkpoints;  // from the first one on
        std::optional<SuspensionCounts> suspensions;
        std::optional<AdmissionCounts> admissions;
    };
    PerWorker& worker(const std::string& name);
    void render_workers(class Exposition& out) const;
    void render_facts(Exposition& out) const;
    void render_checkpoints(Exposition& out) const;
    void render_suspensions(Exposition& out) const;
    void render_admissions(Exposition& out) const;
    void render_host(Exposition& out) const;
    void render_gpus(Exposition& out) const;
    void render_gpu_xids(Exposition& out) const;
    void render_daemon(Exposition& out, const DaemonStats& daemon) const;

    std::vector<WorkerView> views_;
    std::map<std::string, PerWorker> workers_;
    std::map<std::pair<std::string, std::string>, uint64_t> host_actions_;
    std::optional<HostSample> host_;
    // Of the last round (GpuWatch::devices(): a card its driver no longer
    // lists is there, in error, without figures); one not in it loses its series.
    std::vector<GpuDevice> gpus_;
    std::map<std::pair<std::string, uint64_t>, uint64_t> gpu_xids_;
    std::chrono::microseconds last_evaluation_{};
    std::chrono::microseconds last_lateness_{};
    std::chrono::microseconds total_lateness_{};
    size_t rounds_ = 0;
    mutable size_t last_size_ = 0;  // of the last rendering: what the next one reserves
};

}  // namespace infervisor
