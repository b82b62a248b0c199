#include "services/event_recorder.h"

namespace infervisor {

ControlEvent to_control_event(const Event& e) {
    ControlEvent out;
    out.time_usec = e.realtime_usec;
    out.worker = e.worker;
    out.kind = std::string(event_name(e.kind));
    out.message = e.message;
    for (const auto& [k, v] : e.fields) out.fields[k] = v;
    return out;
}

EventRecorder::EventRecorder(EventBus& bus)
    : bus_(bus),
      sink_(bus.subscribe([this](const Event& e) { ring_.record(to_control_event(e)); })) {}

EventRecorder::~EventRecorder() { bus_.unsubscribe(sink_); }

}  // namespace infervisor
