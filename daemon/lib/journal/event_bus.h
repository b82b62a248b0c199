// EventBus: fans each Event out to its sinks (the journal writer, control
// socket subscribers). Sinks are called synchronously on the event loop and
// must not block.
#pragma once

#include <functional>
#include <map>

#include "journal/event.h"

namespace infervisor {

class EventBus {
  public:
    using Sink = std::function<void(const Event&)>;
    using SinkId = uint64_t;

    SinkId subscribe(Sink sink);
    void unsubscribe(SinkId id);
    void emit(Event event);

  private:
    std::map<SinkId, Sink> sinks_;
    SinkId next_id_ = 1;
};

}  // namespace infervisor
