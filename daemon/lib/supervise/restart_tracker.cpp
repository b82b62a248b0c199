#include "supervise/restart_tracker.h"

#include <algorithm>

namespace infervisor {

void RestartTracker::forget_old_starts(TimePoint now) {
    while (!starts_.empty() && now - starts_.front() >= spec_.start_limit_interval)
        starts_.pop_front();
}

bool RestartTracker::try_start() {
    TimePoint now = clock_.now();
    forget_old_starts(now);
    if (static_cast<int64_t>(starts_.size()) >= spec_.start_limit_burst) return false;
    starts_.push_back(now);
    last_start_ = now;
    return true;
}

RestartVerdict RestartTracker::on_exit(ExitClass how) {
    using Action = RestartVerdict::Action;
    TimePoint now = clock_.now();
    // A run longer than backoff_max counts as healthy: the backoff starts over.
    if (last_start_ && now - *last_start_ > spec_.backoff_max) consecutive_failures_ = 0;

    bool restart = spec_.mode == RestartMode::always ||
                   (spec_.mode == RestartMode::on_failure && how == ExitClass::failure);
    if (!restart) return {Action::stay_stopped};

    forget_old_starts(now);
    if (static_cast<int64_t>(starts_.size()) >= spec_.start_limit_burst)
        return {Action::start_limit_hit};

    ++consecutive_failures_;
    ++total_restarts_;
    Duration delay = spec_.backoff_initial;
    for (int i = 1; i < consecutive_failures_ && delay < spec_.backoff_max; ++i) delay *= 2;
    delay = std::min(delay, spec_.backoff_max);
    return {Action::restart, delay, consecutive_failures_};
}

RestartHistory RestartTracker::history() const {
    return {starts_, last_start_, consecutive_failures_, total_restarts_};
}

void RestartTracker::restore(const RestartHistory& history) {
    starts_ = history.starts;
    while (static_cast<int64_t>(starts_.size()) > std::max<int64_t>(spec_.start_limit_burst, 0))
        starts_.pop_front();
    last_start_ = history.last_start;
    consecutive_failures_ = std::max(history.consecutive_failures, 0);
    total_restarts_ = history.total_restarts;
}

void RestartTracker::reset() {
    starts_.clear();
    consecutive_failures_ = 0;
}

}  // namespace infervisor
