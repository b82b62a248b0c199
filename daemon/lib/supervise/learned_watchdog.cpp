#include "supervise/learned_watchdog.h"

#include <algorithm>

namespace infervisor {

std::optional<Duration> LearnedWatchdog::on_heartbeat(TimePoint now) {
    if (last_) longest_ = std::max(longest_, std::chrono::duration_cast<Duration>(now - *last_));
    last_ = now;
    if (heartbeats_ < kLearnedHeartbeats) ++heartbeats_;
    if (!armed()) return std::nullopt;
    return timeout();
}

Duration LearnedWatchdog::timeout() const {
    return std::clamp(longest_ * kLearnedFactor, kLearnedMinimum, kLearnedMaximum);
}

}  // namespace infervisor
