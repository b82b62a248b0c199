// LogLimit: how many log lines or journal entries one source (a worker, a
// client uid) may cause. A cleanup job sweeping a protected dir of 100 000
// files, or a client sending 80 000 refused calls, must not write that many
// entries (journald would rate-limit the whole daemon, hiding the kill
// decisions that matter).
//
// Contract: per key, at most `burst` entries per `window`; admit() says
// whether this one may be logged. The ones refused are counted; the next
// admitted entry (or take_suppressed(), for a periodic summary) reports and
// resets that count. Pure logic, time passed in.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "base/clock.h"

namespace infervisor {

class LogLimit {
  public:
    struct Admission {
        bool log = false;
        uint64_t suppressed_before = 0;  // refused since the last admitted one
    };

    LogLimit(size_t burst, Duration window) : burst_(burst), window_(window) {}

    Admission admit(const std::string& key, TimePoint now);
    // The refused count of `key` so far (and resets it); for a summary
    // when no further entry came to carry it.
    uint64_t take_suppressed(const std::string& key);
    void forget(const std::string& key) { state_.erase(key); }

  private:
    struct State {
        TimePoint window_start{};
        size_t logged = 0;
        uint64_t suppressed = 0;
    };

    size_t burst_;
    Duration window_;
    std::map<std::string, State> state_;
};

}  // namespace infervisor
