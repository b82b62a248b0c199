#include "journal/event_bus.h"

#include <chrono>

namespace infervisor {

EventBus::SinkId EventBus::subscribe(Sink sink) {
    SinkId id = next_id_++;
    sinks_.emplace(id, std::move(sink));
    return id;
}

void EventBus::unsubscribe(SinkId id) { sinks_.erase(id); }

void EventBus::emit(Event event) {
    if (event.realtime_usec == 0)
        event.realtime_usec =
            static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                      std::chrono::system_clock::now().time_since_epoch())
                                      .count());
    // Copy: a sink may unsubscribe itself (a client that went away).
    auto sinks = sinks_;
    for (auto& [id, sink] : sinks) sink(event);
}

}  // namespace infervisor
