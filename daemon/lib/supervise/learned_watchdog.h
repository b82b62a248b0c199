// LearnedWatchdog: a worker that sends WATCHDOG=1 on its own, with no
// `watchdog:` in its configuration, is held to the heartbeats it has shown.
// Once it has sent kLearnedHeartbeats of them, a missing heartbeat for
// kLearnedFactor times the longest interval seen between two (at least
// kLearnedMinimum) ends the run as the configured watchdog would: a worker
// that has proven it beats and then stops is stuck (an infinite loop at
// 100% CPU, a deadlock), and nothing else would notice one that holds still
// in memory. The timeout only grows with what it sees, so a worker whose
// heartbeats slow down is given their new pace. `watchdog: 0s` says "none"
// and turns this off; a configured watchdog replaces it. One per run: a new
// run (or an adopted one) learns afresh. Time comes from the caller.
#pragma once

#include <cstddef>
#include <optional>

#include "base/clock.h"

namespace infervisor {

inline constexpr size_t kLearnedHeartbeats = 3;
inline constexpr int kLearnedFactor = 5;
inline constexpr Duration kLearnedMinimum = std::chrono::seconds(10);
inline constexpr Duration kLearnedMaximum = std::chrono::hours(1);

class LearnedWatchdog {
  public:
    // A heartbeat at `now`. Returns the timeout to (re)arm from now, once
    // learned; nullopt while still learning.
    std::optional<Duration> on_heartbeat(TimePoint now);
    bool armed() const { return heartbeats_ >= kLearnedHeartbeats; }
    // The timeout (meaningful once armed).
    Duration timeout() const;
    Duration longest_interval() const { return longest_; }

  private:
    size_t heartbeats_ = 0;
    std::optional<TimePoint> last_;
    Duration longest_{0};
};

}  // namespace infervisor
