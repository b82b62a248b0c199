// ServiceList: the daemon's services in the order they start (service.h). The
// list does not own them; each must outlive the list's last call.
#pragma once

#include <vector>

#include "services/service.h"

namespace infervisor {

class ServiceList {
  public:
    void add(Service& service) { services_.push_back(&service); }

    // Each in order.
    void configure(const Config& config);
    void start();
    // Each in the reverse order: a service stops before the ones it was
    // started after (which it may use).
    void stop();

  private:
    std::vector<Service*> services_;
};

}  // namespace infervisor
