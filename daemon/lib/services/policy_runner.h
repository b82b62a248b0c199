// PolicyRunner: drives the pure PolicyEngine from the event loop. It samples
// each running worker and the host, asks the engine for decisions, and
// carries them out through the Worker (throttle, freeze, suspend, checkpoint,
// kill) or only logs them in dry-run mode. Every decision is
// a `policy-action` journal entry with the rule, the action, the measured
// values and the result.
//
// When it evaluates: every sample_interval (the tick), and at once when the
// kernel reports something — the host's /proc/pressure/memory trigger, or a
// running worker's memory.pressure trigger or memory.events change (see
// worker_signal_watch.h; a worker's watch lives from its `started` event to
// its `exited` event). Wake-ups are coalesced: at most one evaluation is
// queued, and evaluations are at least kMinWakeGap apart, so a burst of
// notifications (a worker pinned at memory.high notifies up to 50 times a
// second) costs at most 1 / kMinWakeGap evaluations a second while a quiet
// system still reacts within one event-loop turn.
//
// Resume (resume_when, policy/resume_planner.h): a worker a host rule
// suspended, or parked (a kill or checkpoint with `then: park`), waits in
// `preempted_` until the planner picks it; it is then resumed (thawed) or
// started, with a `policy-action` entry (RULE=resume_when, ACTION=resume)
// that has the host's numbers. A new run or a resume by anyone else ends
// its wait. A worker a host rule parked before an in-place re-execution
// or suspended before an in-place re-execution (or a restart that adopted
// it) waits again from the new daemon's start: its state file keeps the
// rule, and the adopted suspended run stays frozen (worker_adoption.cpp).
// One suspended by hand or by a worker rule waits for a resume by hand.
#pragma once

#include <boost/asio/posix/stream_descriptor.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string_view>

#include "base/timer.h"
#include "cgroup/psi_trigger.h"
#include "config/daemon_config.h"
#include "metrics/evaluation_round.h"
#include "metrics/trace_recorder.h"
#include "policy/policy_engine.h"
#include "policy/preempt_history.h"
#include "policy/resume_planner.h"
#include "services/engine_scrapes.h"
#include "services/gpu_watch.h"
#include "services/service.h"
#include "supervise/supervisor.h"
#include "supervise/worker_signal_watch.h"

namespace infervisor {

// Who suspended a worker, as a rule names itself: "rule 'NAME'".
std::string rule_trigger(std::string_view rule);

class PolicyRunner final : public Service {
  public:
    // Shortest time between two evaluations started by kernel wake-ups.
    static constexpr Duration kMinWakeGap{50};

    PolicyRunner(WorkerContext& ctx, Supervisor& supervisor);
    ~PolicyRunner() override;
    PolicyRunner(const PolicyRunner&) = delete;
    PolicyRunner& operator=(const PolicyRunner&) = delete;

    // Takes the rules, host rules, dry-run flag, sampling interval and growth
    // window of a (new) configuration. Workers no longer configured are
    // forgotten.
    void configure(const Config& config) override;
    std::string_view name() const override { return "policy"; }
    // Starts the tick, the host PSI trigger (if the kernel offers one) and the
    // watches of workers already running.
    void start() override;
    void stop() override;

    // One evaluation round; public for tests.
    void evaluate_now();
    // Queues one evaluation (coalesced, see above); `why` is for the debug log.
    void request_evaluation(std::string_view why);
    // Evaluation rounds so far (tick and wake-ups), for tests and status.
    size_t evaluations() const { return evaluations_; }
    // Called after every evaluation round with what it sampled (metrics).
    using RoundObserver = std::function<void(const EvaluationRound&)>;
    void set_round_observer(RoundObserver observer) { observer_ = std::move(observer); }
    // What the engine was given and decided, for `infervisorctl simulate`
    // (metrics/trace_recorder.h): every round, tick or wake-up, with the
    // runs' starts, ends and resumes between them.
    const TraceRecorder& trace() const { return trace_; }
    // The host's GPUs (gpu.* and host.gpu.* metrics): each round begins a
    // reading and samples take the last one (services/gpu_watch.h); null:
    // none.
    void set_gpu_watch(GpuWatch* gpus) { gpus_ = gpus; }
    // Which files of a worker's cgroup are watched; a seam for tests.
    void set_signal_files(SignalWatchFiles files) { signal_files_ = std::move(files); }

  private:
    void arm_tick();
    void refresh_gpus();
    Duration gpu_max_age() const;
    void arm_psi();
    void on_event(const Event& e);
    void open_watch(const Worker& worker);
    void run_queued_evaluation();
    void execute(const Decision& decision);
    Result<void> carry_out(Worker& worker, const Decision& decision);
    // After a suspension the preempt ladder chose: one that freed (almost)
    // nothing is journaled as such and the worker killed by the same rule
    // (preempt_ladder.h); the ladder remembers it (preempt_history_).
    WorkerSuspension::Finished ladder_goes_on(const Decision& decision);
    // The ladder's unload that frees nothing goes on at once to the step the
    // decision carries (Decision::if_unload_fails).
    Worker::UnloadFinished unload_goes_on(const Decision& decision);
    void go_past_unload(const Decision& decision, const std::string& what);
    // A host decision that was carried out: a preemption for resume_when.
    void note_preemption(const Decision& decision);
    std::vector<ResumeCandidate> waiting_for_room();
    void resume(const ResumeDecision& decision);
    // At start: workers that a host rule parked or suspended before this
    // daemon began (an in-place re-execution adopted them) wait for
    // resume_when too.
    void adopt_preempted();
    bool preempted_by_host_rule(const Worker& worker) const;
    // The held descriptors `worker`'s samples are read through.
    StatFileSet& sample_files_of(const Worker& worker);

    // A worker put aside by a host rule, waiting for room.
    struct Preempted {
        TimePoint at;
        WorkerState state;  // suspended or parked: the wait ends when it is not
    };

    WorkerContext& ctx_;
    Supervisor& supervisor_;
    PolicyEngine engine_;
    ResumePlanner resume_planner_;
    PreemptHistory preempt_history_;
    std::map<std::string, Preempted> preempted_;
    bool dry_run_ = false;
    Duration interval_ = std::chrono::seconds(2);
    std::set<std::string> known_;
    std::set<std::string> host_rules_;  // their names
    // On ctx_.clock: every sample_interval; a wake-up kMinWakeGap after the
    // last evaluation.
    std::unique_ptr<Timer> tick_;
    std::unique_ptr<Timer> wake_timer_;
    std::optional<PsiTrigger> psi_;
    std::unique_ptr<boost::asio::posix::stream_descriptor> psi_watch_;
    std::map<std::string, std::unique_ptr<WorkerSignalWatch>> watches_;
    // engine.NAME / engine.rate(NAME): each run's metrics scrape, opened and
    // closed with its watch.
    EngineScrapes engine_scrapes_;
    std::map<std::string, std::string> watch_logged_;  // worker → description last logged
    SignalWatchFiles signal_files_;
    // The statistics files read at every evaluation, held open per worker run
    // (cgroup/stat_file_set.h): dropped when the run starts or ends, so a
    // removed cgroup is never kept alive; /proc's for the host sample.
    std::map<std::string, StatFileSet> sample_files_;
    std::optional<StatFileSet> procfs_files_;
    EventBus::SinkId subscription_ = 0;
    bool running_ = false;
    bool evaluation_queued_ = false;
    std::optional<TimePoint> last_evaluation_;
    size_t evaluations_ = 0;
    RoundObserver observer_;
    GpuWatch* gpus_ = nullptr;
    std::chrono::microseconds tick_lateness_{};  // of the tick that started the current round
    bool woken_ = false;                         // the current round is a kernel wake-up's
    TraceRecorder trace_;
    // A trace event at this moment (wall time from the system clock).
    void record(TraceEventKind kind, const std::string& worker, std::string text,
                const Decision* decision = nullptr);
    // A policy-action event (its RULE, ACTION, DRY_RUN) into the recording.
    void record_action(const Event& e);
    // Expires with the runner: posted handlers check it first.
    std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace infervisor
