// HostKillGuard: the breaker against a host-memory kill loop. A worker that
// the host's running out of memory ended (a host rule's kill, or the
// kernel's host-wide OOM kill) kHostKillsToPark times within kHostKillWindow
// is not restarted into the same host again: the worker is parked until an
// operator starts it. The restart room (restart_room.h) keeps a kill from
// being repeated at once; this catches the host where the worker fits when
// it starts and runs the host out again later, every time. It is separate
// from the start limit, which counts every start and forgets after
// start_limit_interval: a restart that waits for room can take longer than
// that, and a host kill costs a loaded model, so three are enough to say
// the host cannot hold this worker beside the others. Time comes from a
// Clock; the kills are carried over a daemon restart (the state file,
// persisted_worker.h).
#pragma once

#include <cstddef>
#include <deque>
#include <string>

#include "base/clock.h"

namespace infervisor {

inline constexpr size_t kHostKillsToPark = 3;
inline constexpr Duration kHostKillWindow = std::chrono::minutes(30);

class HostKillGuard {
  public:
    explicit HostKillGuard(const Clock& clock) : clock_(clock) {}

    // Records a host kill now. True when it makes kHostKillsToPark within
    // kHostKillWindow: park instead of restarting.
    bool record_kill();
    // The host kills within the window (for messages and status).
    size_t recent_kills() const;
    // An operator's explicit start counts afresh.
    void reset() { kills_.clear(); }

    // Parked for it: kHostKillsToPark kills recorded since the last reset
    // (however old they are now).
    bool tripped() const { return kills_.size() >= kHostKillsToPark; }
    // What parked it, in words: "the host ran out of memory with it 3 times
    // within 30m".
    static std::string verdict();

    // The kills that can still count, oldest first, for the state file; and
    // taking over an earlier daemon's (at most kHostKillsToPark are kept).
    std::deque<TimePoint> history() const { return kills_; }
    void restore(std::deque<TimePoint> kills);

  private:
    void keep_last();  // only the last kHostKillsToPark can make a verdict

    const Clock& clock_;
    std::deque<TimePoint> kills_;  // the last ones, oldest first
};

}  // namespace infervisor
