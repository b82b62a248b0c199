// EventRecorder: keeps the daemon's recent events (control/event_ring.h) as
// control clients see them, from the moment it is made until it is
// destroyed. ControlService makes one before any worker is adopted or
// started, so that `infervisorctl events` has the events of start-up too,
// whatever the socket's own life.
#pragma once

#include "control/event_ring.h"
#include "journal/event_bus.h"

namespace infervisor {

class EventRecorder {
  public:
    explicit EventRecorder(EventBus& bus);
    ~EventRecorder();
    EventRecorder(const EventRecorder&) = delete;
    EventRecorder& operator=(const EventRecorder&) = delete;

    const EventRing& ring() const { return ring_; }

  private:
    EventBus& bus_;
    EventRing ring_;
    EventBus::SinkId sink_;
};

// A journal Event as control clients see it.
ControlEvent to_control_event(const Event& event);

}  // namespace infervisor
