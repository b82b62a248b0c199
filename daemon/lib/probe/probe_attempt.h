// ProbeAttempt: one attempt of a probe under way on the event loop.
//
// Contract: the attempt calls its `done` callback exactly once, on the event
// loop thread, at the latest when its deadline passes, and never from within
// the call that started it — unless cancel() came first, after which `done`
// is never called. Nothing an attempt does blocks
// the loop; what it reads from the worker is capped. Destroying the handle
// does not cancel: the runner cancels explicitly when the run ends.
#pragma once

#include <functional>
#include <memory>

#include "probe/probe_tracker.h"

namespace infervisor {

using ProbeDone = std::function<void(ProbeOutcome)>;

class ProbeAttempt {
  public:
    virtual ~ProbeAttempt() = default;
    virtual void cancel() = 0;
};

}  // namespace infervisor
