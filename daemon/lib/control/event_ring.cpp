#include "control/event_ring.h"

#include <algorithm>

namespace infervisor {

bool EventQuery::matches(const ControlEvent& event) const {
    if (event.time_usec < since_usec) return false;
    return workers.empty() ||
           std::find(workers.begin(), workers.end(), event.worker) != workers.end();
}

void EventRing::record(ControlEvent event) {
    events_.push_back(std::move(event));
    if (events_.size() > capacity_) events_.pop_front();
}

std::vector<ControlEvent> EventRing::select(const EventQuery& query) const {
    std::vector<ControlEvent> newest_first;
    for (auto it = events_.rbegin(); it != events_.rend() && newest_first.size() < query.limit;
         ++it)
        if (query.matches(*it)) newest_first.push_back(*it);
    return {newest_first.rbegin(), newest_first.rend()};
}

}  // namespace infervisor
