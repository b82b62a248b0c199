// EventRing: the last events the daemon had, for RecentEvents and the
// history of Subscribe (`infervisorctl events`). It is filled from the
// daemon's first event on (services/control_service.h subscribes it before
// any worker is adopted or started), so the events of start-up are in it.
//
// Contract: holds at most `capacity` events, dropping the oldest; select()
// returns the newest ones that match a query, oldest first.
#pragma once

#include <cstddef>
#include <deque>
#include <vector>

#include "control/supervisor_api.h"

namespace infervisor {

class EventRing {
  public:
    static constexpr std::size_t kDefaultCapacity = 1000;

    explicit EventRing(std::size_t capacity = kDefaultCapacity) : capacity_(capacity) {}

    void record(ControlEvent event);
    std::vector<ControlEvent> select(const EventQuery& query) const;

  private:
    std::size_t capacity_;
    std::deque<ControlEvent> events_;
};

}  // namespace infervisor
