// PreemptHistory: what the preempt ladder (preempt_ladder.h) has learned
// about each worker from the steps it took, so it does not repeat one that
// did not help:
//  - a suspension that freed (almost) nothing: its memory is pinned (mlock)
//    or swap had no room; not suspended again while this daemon runs (the
//    same program pins the same way) unless its config changes;
//  - a resume by resume_when: a worker a host rule picks again within
//    kRegrowWindow of it, growing (PreemptContext::victim_growing), grew
//    back into the trouble it was suspended for (a leak, not a burst), so
//    the ladder goes past the suspension; one that holds still is suspended
//    again.
//  - an unload of its models: a worker picked again within kRegrowWindow of
//    one took its memory back (or never gave it), so the ladder goes past
//    the unload.
// Pure: the caller says when.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "base/clock.h"
#include "policy/preempt_ladder.h"

namespace infervisor {

class PreemptHistory {
  public:
    static constexpr Duration kRegrowWindow = std::chrono::minutes(30);

    // The facts for `worker` at `now`, with what the caller knows of it.
    PreemptFacts facts_of(const std::string& worker, bool preemptible,
                          std::optional<Duration> checkpoint_took, TimePoint now) const;

    void suspension_freed_nothing(const std::string& worker, std::string what);
    void resumed(const std::string& worker, TimePoint now);
    void unloaded(const std::string& worker, TimePoint now);
    // The worker left the config or its definition changed: a fresh start.
    void forget(const std::string& worker);

  private:
    struct Entry {
        std::string freed_nothing;  // "its suspension freed 0 B of 412 MiB"
        std::optional<TimePoint> resumed_at;
        std::optional<TimePoint> unloaded_at;
    };
    std::map<std::string, Entry> entries_;
};

}  // namespace infervisor
