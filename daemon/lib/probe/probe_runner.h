// ProbeRunner: runs one probe of one worker on the event loop, for one run
// at a time: a timer for the next attempt, at most one attempt in flight,
// its ProbeTracker, and a callback for each change of verdict.
//
// Contract: start() begins (or restarts) probing; stop() cancels the timer
// and the attempt under way, after which no callback runs. How an attempt
// is made is injected (an AttemptStarter: socket or exec probe, or a fake
// in tests). Callbacks run on the event loop thread and may call stop().
#pragma once

#include <functional>
#include <memory>

#include "base/timer.h"
#include "probe/probe_attempt.h"
#include "probe/probe_tracker.h"

namespace infervisor {

class ProbeRunner {
  public:
    using AttemptStarter =
        std::function<std::shared_ptr<ProbeAttempt>(Duration timeout, ProbeDone done)>;
    using OnChange = std::function<void(const ProbeChange&)>;

    ProbeRunner(const Clock& clock, ProbeSpec spec, AttemptStarter starter, OnChange on_change);
    ~ProbeRunner();
    ProbeRunner(const ProbeRunner&) = delete;
    ProbeRunner& operator=(const ProbeRunner&) = delete;

    void start();
    void stop();
    bool running() const { return running_; }
    const ProbeTracker& tracker() const { return tracker_; }

  private:
    void arm();
    void attempt();
    void on_done(ProbeOutcome outcome);

    ProbeTracker tracker_;
    const Clock& clock_;
    AttemptStarter starter_;
    OnChange on_change_;
    std::unique_ptr<Timer> timer_;  // on clock_: the next attempt
    std::shared_ptr<ProbeAttempt> in_flight_;
    bool running_ = false;
    uint64_t generation_ = 0;  // bumped by stop(): late callbacks of a stopped run are dropped
};

}  // namespace infervisor
