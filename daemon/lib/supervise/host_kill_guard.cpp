#include "supervise/host_kill_guard.h"

#include <algorithm>

namespace infervisor {

bool HostKillGuard::record_kill() {
    kills_.push_back(clock_.now());
    // Only the last kHostKillsToPark can make a verdict.
    while (kills_.size() > kHostKillsToPark) kills_.pop_front();
    return recent_kills() >= kHostKillsToPark;
}

void HostKillGuard::restore(std::deque<TimePoint> kills) {
    kills_ = std::move(kills);
    while (kills_.size() > kHostKillsToPark) kills_.pop_front();
}

size_t HostKillGuard::recent_kills() const {
    TimePoint now = clock_.now();
    return static_cast<size_t>(std::count_if(
        kills_.begin(), kills_.end(), [now](TimePoint t) { return now - t < kHostKillWindow; }));
}

}  // namespace infervisor
