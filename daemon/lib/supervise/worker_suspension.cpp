#include "supervise/worker_suspension.h"

#include <spdlog/spdlog.h>

#include <cstdio>

#include "base/file_io.h"
#include "base/units.h"
#include "cgroup/cgroup_limits.h"
#include "cgroup/cgroup_stats.h"

namespace infervisor {

namespace {

std::string seconds_text(double seconds) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", seconds);
    return buf;
}

double seconds_between(TimePoint from, TimePoint to) {
    return std::chrono::duration<double>(to - from).count();
}

std::string bytes_text(std::optional<uint64_t> v) { return v ? std::to_string(*v) : ""; }

std::string field_value(const WorkerSuspension::Fields& fields, const std::string& name) {
    for (const auto& [key, value] : fields)
        if (key == name) return value;
    return {};
}

std::optional<uint64_t> swap_current(const CgroupDir& dir) {
    return value_or_empty(CgroupStats(dir).swap_current());
}

std::optional<uint64_t> memory_current(const CgroupDir& dir) {
    return value_or_empty(CgroupStats(dir).memory_current());
}

std::optional<std::string> read_limit(const CgroupDir& dir, MemoryLimit which) {
    auto text = read_memory_limit(dir, which);
    if (!text) return std::nullopt;
    return *text;
}

}  // namespace

WorkerSuspension::WorkerSuspension(boost::asio::io_context& io, const Clock& clock,
                                   std::string worker, Emit emit, Thawed thawed)
    : io_(io),
      clock_(clock),
      worker_(std::move(worker)),
      emit_(std::move(emit)),
      thawed_(std::move(thawed)),
      freeze_timer_(clock.make_timer()) {}

WorkerSuspension::~WorkerSuspension() = default;

BackgroundWork& WorkerSuspension::background() {
    if (!background_) background_ = std::make_unique<BackgroundWork>(io_);
    return *background_;
}

Result<void> WorkerSuspension::suspend(const CgroupDir& dir, std::string trigger, Finished finished,
                                       EngineStep step) {
    if (active()) return plain_error("already suspended (" + trigger_ + ")");
    dir_ = dir;
    trigger_ = std::move(trigger);
    since_ = clock_.now();
    frozen_at_.reset();
    memory_before_.reset();
    step_ = std::move(step);
    slept_ = false;
    engine_fields_.clear();
    memory_before_sleep_ = step_.before ? memory_current(dir) : std::nullopt;
    if (!step_.skipped.empty()) {
        engine_fields_ = {{"SUSPEND_METHOD", step_.name},
                          {step_.before_field, "skipped"},
                          {step_.before_field + "_SKIPPED", step_.skipped}};
        engine_fields_.insert(engine_fields_.end(), step_.fields.begin(), step_.fields.end());
        step_.before = nullptr;
        step_.after = nullptr;
    }
    if (!step_.before) {
        if (auto r = freeze(); !r) {
            trigger_.clear();
            since_.reset();
            step_ = {};
            return r;
        }
        suspended_ = std::move(finished);
        return {};
    }
    suspended_ = std::move(finished);
    phase_ = Phase::engine_sleeping;
    uint64_t generation = generation_;
    TimePoint began = clock_.now();
    step_.before([this, generation, began](Result<void> result) {
        if (generation == generation_ && phase_ == Phase::engine_sleeping)
            engine_slept(std::move(result), began);
    });
    return {};
}

// The engine's sleep is done or failed: the freeze goes on either way (a
// failed sleep leaves a plain freeze, which still frees the host's memory).
void WorkerSuspension::engine_slept(Result<void> result, TimePoint began) {
    slept_ = result.ok();
    engine_fields_ = {
        {"SUSPEND_METHOD", step_.name},
        {step_.before_field, slept_ ? "ok" : "failed"},
        {step_.before_field + "_SECONDS", seconds_text(seconds_between(began, clock_.now()))},
        {step_.memory_field, bytes_text(memory_before_sleep_)}};
    engine_fields_.insert(engine_fields_.end(), step_.fields.begin(), step_.fields.end());
    if (!result) {
        engine_fields_.emplace_back(step_.before_field + "_ERROR", result.error().message());
        spdlog::warn("{}: {} failed, suspending with a plain freeze: {}", worker_, step_.name,
                     result.error().message());
    }
    if (auto r = freeze(); !r) give_up_freezing(r.error().message());
}

// memory.swap.max lifted, cgroup.freeze 1; phase `freezing` once written.
Result<void> WorkerSuspension::freeze() {
    saved_high_ = read_limit(*dir_, MemoryLimit::high);
    saved_swap_max_.reset();
    // Its pages must be allowed into swap, whatever its swap_max.
    if (auto swap_max = read_limit(*dir_, MemoryLimit::swap_max); swap_max && *swap_max != "max") {
        if (auto r = write_memory_limit(*dir_, MemoryLimit::swap_max, "max"); r)
            saved_swap_max_ = *swap_max;
        else
            spdlog::warn("{}: {}", worker_, r.error().message());
    }
    if (auto r = dir_->set_frozen(true); !r) {
        if (saved_swap_max_)
            (void)write_memory_limit(*dir_, MemoryLimit::swap_max, *saved_swap_max_);
        saved_swap_max_.reset();
        return r;
    }
    freeze_began_ = clock_.now();
    phase_ = Phase::freezing;
    wait_frozen(0);
    return {};
}

Result<void> WorkerSuspension::adopt(const CgroupDir& dir, std::string trigger, TimePoint since,
                                     std::optional<uint64_t> memory_before, RestoreLimits restore,
                                     EngineStep step, std::optional<bool> engine_slept) {
    if (active()) return plain_error("already suspended (" + trigger_ + ")");
    if (auto r = dir.set_frozen(true); !r) return r;
    dir_ = dir;
    trigger_ = std::move(trigger);
    since_ = since;
    frozen_at_ = since;
    memory_before_ = memory_before;
    saved_high_.reset();
    saved_swap_max_.reset();
    restore_configured_ = std::move(restore);
    slept_ = static_cast<bool>(step.after) && engine_slept.value_or(true);
    step_ = std::move(step);
    phase_ = Phase::suspended;
    return {};
}

std::optional<bool> WorkerSuspension::engine_asleep() const {
    // While the sleep is under way it is not known yet: a state file
    // written then says nothing, and an adopting daemon asks for the wake.
    if (!active() || step_.name.empty() || phase_ == Phase::engine_sleeping) return std::nullopt;
    return slept_;
}

// cgroup.freeze takes effect once every task has reached the freezer: polled,
// 5 ms doubling to 100 ms, for up to kFreezeWait.
void WorkerSuspension::wait_frozen(int polls) {
    auto frozen = dir_->frozen();
    if (frozen && *frozen) {
        frozen_at_ = clock_.now();
        return start_reclaim(true);
    }
    if (clock_.now() - freeze_began_.value_or(*since_) >= kFreezeWait)
        return give_up_freezing(frozen ? "a task has not reached the freezer"
                                       : frozen.error().message());
    uint64_t generation = generation_;
    freeze_timer_->arm(std::chrono::milliseconds(std::min(5 << std::min(polls, 5), 100)),
                       [this, polls, generation] {
                           if (generation == generation_ && phase_ == Phase::freezing)
                               wait_frozen(polls + 1);
                       });
}

// Issue 26, defect 10: a worker whose tasks do not all freeze keeps
// running. Marked `suspended` with swap.max lifted and no watchdog or
// probes, it would run unwatched, swapping past its swap_max. So the
// suspension is given up: limits back, thawed, the Worker back to its
// state (watchdog, probes), `resumed` journaled with SUSPEND_FAILED, and
// the suspend answered as failed.
void WorkerSuspension::give_up_freezing(const std::string& why) {
    ++generation_;
    restore_limits();
    auto thawed = dir_->set_frozen(false);
    std::string reason = "not frozen within " + format_duration(kFreezeWait) + " (" + why + ")";
    Fields fields = {{"TRIGGER", "freeze-timeout"},
                     {"SUSPENDED_BY", trigger_},
                     {"SUSPEND_FAILED", reason},
                     {"SUSPENDED_SECONDS", seconds_text(seconds_between(*since_, clock_.now()))}};
    if (!thawed) fields.emplace_back("THAW_ERROR", thawed.error().message());
    fields.insert(fields.end(), engine_fields_.begin(), engine_fields_.end());
    std::string message = "suspension (" + trigger_ + ") given up: " + reason +
                          "; its limits are back and it runs on, watched as before";
    if (thawed_) thawed_();
    wake_and_report(std::move(message), std::move(fields), [this, reason](Result<void>) {
        answer_suspend({false, reason + "; the worker runs on"});
        if (queued_resume_) {
            auto finished = std::move(queued_resume_->second);
            queued_resume_.reset();
            if (finished) finished({true, "it was never suspended: " + reason});
        }
    });
}

void WorkerSuspension::start_reclaim(bool frozen) {
    phase_ = Phase::reclaiming;
    CgroupDir dir = *dir_;
    uint64_t generation = generation_;
    background().run<ReclaimResult>([dir] { return reclaim_memory(dir, kReclaimDeadline); },
                                    [this, generation, frozen](ReclaimResult result) {
                                        if (generation == generation_) on_reclaimed(result, frozen);
                                    });
}

void WorkerSuspension::on_reclaimed(const ReclaimResult& r, bool frozen) {
    phase_ = Phase::suspended;
    // What the suspension gave the host, and what the worker will want back:
    // from before the engine's sleep when there was one (a sleep that freed
    // host memory counts, for the preempt ladder's "freed nothing" too).
    std::optional<uint64_t> wanted = r.memory_before;
    uint64_t freed = r.bytes_reclaimed();
    if (memory_before_sleep_ && r.memory_after) {
        wanted = memory_before_sleep_;
        freed = *wanted > *r.memory_after ? *wanted - *r.memory_after : 0;
    }
    memory_before_ = wanted;
    TimePoint now = clock_.now();
    TimePoint freeze_began = freeze_began_.value_or(*since_);
    double freeze_seconds = seconds_between(freeze_began, frozen_at_.value_or(freeze_began));
    std::optional<uint64_t> swap = swap_current(*dir_);
    Fields fields = {{"TRIGGER", trigger_},
                     {"FROZEN", frozen ? "1" : "0"},
                     {"FREEZE_SECONDS", seconds_text(freeze_seconds)},
                     {"RECLAIM_METHOD", std::string(to_string(r.method))},
                     {"RECLAIM_SECONDS", seconds_text(r.seconds)},
                     {"RECLAIM_STEPS", std::to_string(r.steps)},
                     {"RECLAIM_COMPLETE", r.complete ? "1" : "0"},
                     {"BYTES_RECLAIMED", std::to_string(r.bytes_reclaimed())},
                     {"MEMORY_BEFORE", bytes_text(r.memory_before)},
                     {"MEMORY_AFTER", bytes_text(r.memory_after)},
                     {"SWAP_CURRENT", bytes_text(swap)},
                     {"SECONDS", seconds_text(seconds_between(*since_, now))}};
    if (!r.error.empty()) fields.emplace_back("RECLAIM_ERROR", r.error);
    fields.insert(fields.end(), engine_fields_.begin(), engine_fields_.end());
    std::string how =
        r.method == ReclaimMethod::none
            ? "its memory stays where it is (" + r.error + ")"
            : format_size(r.bytes_reclaimed()) + " of " + format_size(r.memory_before.value_or(0)) +
                  " pushed out with " + std::string(to_string(r.method)) + " in " +
                  seconds_text(r.seconds) + "s" + (r.error.empty() ? "" : " (" + r.error + ")");
    std::string engine;
    if (!step_.skipped.empty())
        engine = "; " + step_.name + " not asked for (" + step_.skipped + "): a plain freeze";
    else if (!engine_fields_.empty())
        engine = slept_ ? "; " + step_.name + ": " + step_.done_words
                        : "; " + step_.name + " failed, a plain freeze instead: " +
                              field_value(engine_fields_, step_.before_field + "_ERROR");
    emit_(EventKind::suspended,
          "suspended (" + trigger_ + "): " + (frozen ? "frozen" : "not fully frozen") + ", " + how +
              engine,
          std::move(fields));
    answer_suspend(
        {true, "suspended; " + how, wanted, freed, step_.name, slept_ && step_.skipped.empty()});
    if (queued_resume_) {
        auto [trigger, finished] = std::move(*queued_resume_);
        queued_resume_.reset();
        thaw_and_report(std::move(trigger), std::move(finished));
    }
}

Result<void> WorkerSuspension::resume(std::string trigger, Finished finished) {
    if (!active()) return plain_error("not suspended");
    if (phase_ == Phase::engine_waking) return plain_error("a resume is already under way");
    if (queued_resume_) return plain_error("a resume is already under way");
    if (phase_ != Phase::suspended) {
        // Freezing or reclaiming: after the reclaim, which is bounded.
        queued_resume_.emplace(std::move(trigger), std::move(finished));
        return {};
    }
    thaw_and_report(std::move(trigger), std::move(finished));
    return {};
}

void WorkerSuspension::restore_limits() {
    // memory.high first: thawed under a lowered memory.high it would be throttled.
    if (saved_high_)
        if (auto r = write_memory_limit(*dir_, MemoryLimit::high, *saved_high_); !r)
            spdlog::warn("{}: {}", worker_, r.error().message());
    if (saved_swap_max_)
        if (auto r = write_memory_limit(*dir_, MemoryLimit::swap_max, *saved_swap_max_); !r)
            spdlog::warn("{}: {}", worker_, r.error().message());
    saved_high_.reset();
    saved_swap_max_.reset();
    if (auto restore = std::exchange(restore_configured_, {})) restore();
}

void WorkerSuspension::thaw_and_report(std::string trigger, Finished finished) {
    TimePoint begin = clock_.now();
    restore_limits();
    auto thawed = dir_->set_frozen(false);
    TimePoint now = clock_.now();
    Fields fields = {{"TRIGGER", trigger},
                     {"SUSPENDED_BY", trigger_},
                     {"SUSPENDED_SECONDS", seconds_text(seconds_between(*since_, now))},
                     {"RESUME_SECONDS", seconds_text(seconds_between(begin, now))},
                     {"SWAP_CURRENT", bytes_text(swap_current(*dir_))},
                     {"MEMORY_CURRENT", bytes_text(memory_current(*dir_))}};
    std::string message = "resumed (" + trigger + ") after " +
                          seconds_text(seconds_between(*since_, now)) + "s suspended (" + trigger_ +
                          ")";
    if (!thawed) {
        fields.emplace_back("THAW_ERROR", thawed.error().message());
        message += "; thawing failed: " + thawed.error().message();
    }
    if (thawed_) thawed_();
    wake_and_report(
        std::move(message), std::move(fields),
        [thawed, failed = step_.after_failed, finished = std::move(finished)](Result<void> woken) {
            if (!finished) return;
            if (!thawed) return finished({false, thawed.error().message()});
            finished({true, woken ? "resumed"
                                  : "resumed, but " + failed + ": " + woken.error().message()});
        });
}

void WorkerSuspension::wake_and_report(std::string message, Fields fields,
                                       std::function<void(Result<void>)> then) {
    if (!slept_ || !step_.after) {
        end();
        emit_(EventKind::resumed, std::move(message), std::move(fields));
        return then({});
    }
    phase_ = Phase::engine_waking;
    TimePoint began = clock_.now();
    after_wake_ = [this, began, message = std::move(message), fields = std::move(fields),
                   then = std::move(then)](Result<void> woken) mutable {
        fields.emplace_back(step_.after_field, woken ? "ok" : "failed");
        fields.emplace_back(step_.after_field + "_SECONDS",
                            seconds_text(seconds_between(began, clock_.now())));
        if (!woken) {
            fields.emplace_back(step_.after_field + "_ERROR", woken.error().message());
            // Logged as a warning too (the event's priority is its kind's):
            // it runs, but not as before, until someone acts.
            spdlog::warn("{}: {}: {}", worker_, step_.after_failed, woken.error().message());
            message += "; " + step_.after_failed + " (" + woken.error().message() +
                       "): " + step_.after_failed_then;
        }
        end();
        emit_(EventKind::resumed, std::move(message), std::move(fields));
        then(std::move(woken));
    };
    uint64_t generation = generation_;
    step_.after([this, generation](Result<void> woken) {
        if (generation != generation_ || phase_ != Phase::engine_waking) return;
        if (auto next = std::exchange(after_wake_, {})) next(std::move(woken));
    });
}

// The suspension is over: nothing of it is left but what the caller reports.
void WorkerSuspension::end() {
    phase_ = Phase::none;
    trigger_.clear();
    since_.reset();
    freeze_began_.reset();
    slept_ = false;
    step_ = {};
    engine_fields_.clear();
    memory_before_sleep_.reset();
}

void WorkerSuspension::answer_suspend(Outcome outcome) {
    if (auto finished = std::exchange(suspended_, {})) finished(outcome);
}

void WorkerSuspension::abandon() {
    if (!active()) return;
    ++generation_;
    freeze_timer_->cancel();
    if (step_.cancel) step_.cancel();
    if (phase_ == Phase::engine_waking) {
        // Thawed already: the wake is given up, and reported as such.
        if (auto next = std::exchange(after_wake_, {}))
            return next(plain_error("the run ended while its engine was being woken"));
    }
    restore_limits();
    (void)dir_->set_frozen(false);
    end();
    answer_suspend({false, "the run ended before the suspension was complete"});
    if (queued_resume_) {
        auto finished = std::move(queued_resume_->second);
        queued_resume_.reset();
        if (finished) finished({true, "the run ended"});
    }
}

}  // namespace infervisor
