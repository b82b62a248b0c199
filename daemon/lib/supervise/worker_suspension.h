// WorkerSuspension: suspending one Worker without losing its state — freeze
// it, push its memory out to swap, and later let it run again where it was.
// The "preempt without a copy" of issue 13; a checkpoint is the copy.
//
//   suspend:  memory.swap.max lifted to "max" (the worker's pages must be
//             allowed into swap, whatever its swap_max) → cgroup.freeze 1 →
//             wait for cgroup.events `frozen 1` (up to kFreezeWait; a task
//             that never reaches the freezer, e.g. stuck in the kernel, makes
//             the suspension fail: limits back, thawed, `resumed` journaled
//             with SUSPEND_FAILED, the worker watched as before)
//             → memory reclaim on a background thread (cgroup/memory_reclaim.h,
//             up to kReclaimDeadline) → `suspended` journaled with the bytes
//             reclaimed and the seconds taken.
//   resume:   memory.high and memory.swap.max written back as they were →
//             cgroup.freeze 0 → `resumed` journaled with the time it was
//             suspended. A resume asked for while the reclaim still runs
//             happens when it ends (the reclaim is bounded).
//   engine:   with an EngineStep (`suspend: {method: vllm-sleep}`), the
//             suspend first runs its `before` (vLLM's /sleep; bounded by the
//             step) and only then freezes; a `before` that fails does not
//             stop the suspension: it goes on as a plain freeze and the
//             `suspended` event says why (ENGINE_SLEEP=failed,
//             ENGINE_SLEEP_ERROR). A resume thaws first (the Worker runs
//             again), then runs the step's `after` (/wake_up) when the
//             `before` succeeded, and journals `resumed` once it answered,
//             with ENGINE_WAKE=ok|failed: a failed wake leaves the worker
//             running and its engine asleep (it serves nothing; a request
//             may even crash a sleeping vLLM's engine, vLLM issue 15483,
//             and its /health turns 503: the worker's probes see it), said in
//             the `resumed` event with what to do and logged as a warning;
//             nothing else is done to it.
//             A freeze given up after a sleep wakes the engine the same way.
//   adopt:    a run an earlier daemon image suspended (an in-place
//             re-execution, a restart that adopted it) stays frozen and
//             suspended; its resume writes the worker's configured limits
//             (what the earlier image saved died with it).
//
// Contract: all methods run on the event loop thread and none blocks; only
// the reclaim runs on this object's background thread, touching nothing but
// the cgroup's files. Each request answers its `Finished` exactly once: when
// it has happened, or (suspend) when the run ended first. The Worker keeps
// the lifecycle (state, watchdog); this object only the cgroup's side.
#pragma once

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "base/timer.h"
#include "cgroup/cgroup_dir.h"
#include "cgroup/memory_reclaim.h"
#include "journal/event.h"
#include "supervise/background_work.h"

namespace infervisor {

// SUSPEND_METHOD of the GPU release step (supervise/worker_gpu_release.h).
inline constexpr std::string_view kGpuReleaseStep = "cuda-checkpoint";

// Who suspended an adopted run whose state file does not say (one written
// by an older daemon).
inline constexpr std::string_view kSuspendedBeforeUpgrade = "an earlier daemon";

// A step around the freeze: an engine's (vLLM's sleep and wake) or the GPU
// release (supervise/worker_gpu_release.h). `before` and `after` each call
// their callback exactly once, on the loop, never from within the call,
// within their own bound (WorkerVllmSleep: engine.timeout); `cancel`
// drops the one in flight (its callback then never runs).
struct SuspensionStep {
    std::string name;  // the method, e.g. "vllm-sleep" (SUSPEND_METHOD)
    // Non-empty: the step is not taken, for this reason (a plain
    // freeze; the suspended event says ENGINE_SLEEP=skipped and why).
    std::string skipped;
    std::function<void(std::function<void(Result<void>)>)> before;
    std::function<void(std::function<void(Result<void>)>)> after;
    std::function<void()> cancel;
    // The journal's words for it; the engine's by default. Fields:
    // <before_field> (ok, failed, skipped) with _SECONDS, _ERROR and
    // _SKIPPED; <memory_field> (memory.current before it); <after_field>
    // (ok, failed) with _SECONDS and _ERROR.
    std::string before_field = "ENGINE_SLEEP";
    std::string after_field = "ENGINE_WAKE";
    std::string memory_field = "MEMORY_BEFORE_SLEEP";
    std::string done_words = "the engine sleeps";  // `suspended`, once `before` succeeded
    // `resumed`, when `after` failed: what failed, and what the worker
    // is left as and what to do.
    std::string after_failed = "its engine did not wake";
    std::string after_failed_then =
        "it runs but serves nothing until woken (POST /wake_up to it, or infervisorctl "
        "suspend and resume, or restart it)";
    std::vector<std::pair<std::string, std::string>>
        fields;                          // more for `suspended` (e.g. the GPU memory it held)
    std::optional<uint64_t> held_bytes;  // the GPU release: what it moves, when known
};

class WorkerSuspension {
  public:
    using Fields = std::vector<std::pair<std::string, std::string>>;
    using Emit = std::function<void(EventKind, std::string, Fields)>;
    struct Outcome {
        bool ok = false;
        std::string detail;  // what happened, in words
        // Suspended: memory.current before the reclaim (before the engine's
        // sleep, with one), and what left it since.
        std::optional<uint64_t> memory_before;
        uint64_t bytes_reclaimed = 0;
        // The step before the freeze (SuspensionStep::name, e.g. the GPU
        // release) and whether it was done; empty and false without one.
        std::string step;
        bool step_done = false;
    };
    using Finished = std::function<void(const Outcome&)>;
    // Runs once thawed, before `resumed` is journaled: the Worker's state
    // must say `running` by the time anyone hears of it.
    using Thawed = std::function<void()>;
    // Writes the worker's configured limits back (an adopted suspension).
    using RestoreLimits = std::function<void()>;

    using EngineStep = SuspensionStep;

    static constexpr Duration kFreezeWait = std::chrono::seconds(10);
    static constexpr Duration kReclaimDeadline = std::chrono::minutes(2);

    WorkerSuspension(boost::asio::io_context& io, const Clock& clock, std::string worker, Emit emit,
                     Thawed thawed);
    ~WorkerSuspension();
    WorkerSuspension(const WorkerSuspension&) = delete;
    WorkerSuspension& operator=(const WorkerSuspension&) = delete;

    // Suspended, or on the way there (freezing, reclaiming).
    bool active() const { return phase_ != Phase::none; }
    // Who asked ("rule 'host-thrash'", "infervisorctl"); "" when not active.
    const std::string& trigger() const { return trigger_; }
    // Since when (the freeze), when active.
    std::optional<TimePoint> since() const { return since_; }
    // memory.current when the reclaim (or the engine's sleep) began: what it
    // will want back.
    std::optional<uint64_t> memory_before() const { return memory_before_; }

    // `finished` runs once the memory has been reclaimed (ok) or the run ended
    // first. Fails when already active or (without `step`) cgroup.freeze
    // cannot be written; with `step`, a freeze that cannot be written after
    // the step is given up as one that never completes.
    Result<void> suspend(const CgroupDir& dir, std::string trigger, Finished finished,
                         EngineStep step = {});
    // Takes over a suspension an earlier daemon image made: suspended by
    // `trigger` since `since`, `memory_before` as it measured it (unknown if
    // its reclaim had not begun). The cgroup is frozen (again, should anyone
    // have thawed it meanwhile) and nothing is reclaimed or journaled; a
    // resume runs `restore` instead of writing saved values back. Fails
    // when already active or cgroup.freeze cannot be written.
    // With `step`, its resume runs step.after too when `engine_slept` says
    // the earlier image's `before` succeeded, or does not say.
    Result<void> adopt(const CgroupDir& dir, std::string trigger, TimePoint since,
                       std::optional<uint64_t> memory_before, RestoreLimits restore,
                       EngineStep step = {}, std::optional<bool> engine_slept = std::nullopt);
    // With an engine step, when active: whether its `before` succeeded (the
    // engine sleeps); empty otherwise.
    std::optional<bool> engine_asleep() const;
    // With a step, when active: its name (SUSPEND_METHOD); "" otherwise.
    const std::string& step_name() const { return step_.name; }
    // `finished` runs once the worker has been thawed. Fails when not active.
    Result<void> resume(std::string trigger, Finished finished);
    // The run is ending (stop, kill, exit): limits written back, thawed so
    // that it can act on its stop signal, nothing journaled; a pending
    // suspend is answered as failed, a pending resume as done.
    void abandon();

  private:
    enum class Phase { none, engine_sleeping, freezing, reclaiming, suspended, engine_waking };

    void engine_slept(Result<void> result, TimePoint began);
    Result<void> freeze();
    void wait_frozen(int polls);
    void give_up_freezing(const std::string& why);
    void start_reclaim(bool frozen);
    void on_reclaimed(const ReclaimResult& result, bool frozen);
    void thaw_and_report(std::string trigger, Finished finished);
    // Once thawed: wakes the engine when it was put to sleep, then ends the
    // suspension, journals `resumed` (message and fields, with how the wake
    // went) and runs `then` with the wake's outcome.
    void wake_and_report(std::string message, Fields fields,
                         std::function<void(Result<void>)> then);
    void end();
    void restore_limits();
    void answer_suspend(Outcome outcome);
    BackgroundWork& background();

    boost::asio::io_context& io_;
    const Clock& clock_;
    std::string worker_;
    Emit emit_;
    Thawed thawed_;
    Phase phase_ = Phase::none;
    std::optional<CgroupDir> dir_;
    std::string trigger_;
    std::optional<TimePoint> since_;
    std::optional<TimePoint> freeze_began_;
    std::optional<TimePoint> frozen_at_;
    EngineStep step_;
    bool slept_ = false;                            // step_.before succeeded
    Fields engine_fields_;                          // for `suspended`: how the sleep went
    std::optional<uint64_t> memory_before_sleep_;   // memory.current before step_.before
    std::function<void(Result<void>)> after_wake_;  // the step_.after in flight's continuation
    std::optional<uint64_t> memory_before_;
    std::optional<std::string> saved_high_;      // memory.high before the suspension
    std::optional<std::string> saved_swap_max_;  // memory.swap.max, when it was lifted
    RestoreLimits restore_configured_;           // an adopted suspension's, instead
    Finished suspended_;                         // answer of the pending suspend
    std::optional<std::pair<std::string, Finished>> queued_resume_;  // during the reclaim
    uint64_t generation_ = 0;  // bumped by abandon(): a late reclaim result is dropped
    // On clock_: polls cgroup.freeze.
    std::unique_ptr<Timer> freeze_timer_;
    std::unique_ptr<BackgroundWork> background_;  // created at the first suspension
};

}  // namespace infervisor
