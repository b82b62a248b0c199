#include "supervise/host_kill_guard.h"

#include <algorithm>

#include "base/units.h"

namespace infervisor {

bool HostKillGuard::record_kill() {
    kills_.push_back(clock_.now());
    keep_last();
    return recent_kills() >= kHostKillsToPark;
}

void HostKillGuard::restore(std::deque<TimePoint> kills) {
    kills_ = std::move(kills);
    keep_last();
}

void HostKillGuard::keep_last() {
    while (kills_.size() > kHostKillsToPark) kills_.pop_front();
}

std::string HostKillGuard::verdict() {
    return "the host ran out of memory with it " + std::to_string(kHostKillsToPark) +
           " times within " + format_duration(kHostKillWindow);
}

size_t HostKillGuard::recent_kills() const {
    TimePoint now = clock_.now();
    return static_cast<size_t>(std::count_if(
        kills_.begin(), kills_.end(), [now](TimePoint t) { return now - t < kHostKillWindow; }));
}

}  // namespace infervisor
