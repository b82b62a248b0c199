#include "services/service_list.h"

#include <spdlog/spdlog.h>

namespace infervisor {

void ServiceList::configure(const Config& config) {
    for (Service* s : services_) s->configure(config);
}

void ServiceList::start() {
    for (Service* s : services_) {
        spdlog::debug("starting {}", s->name());
        s->start();
    }
}

void ServiceList::stop() {
    for (auto it = services_.rbegin(); it != services_.rend(); ++it) {
        spdlog::debug("stopping {}", (*it)->name());
        (*it)->stop();
    }
}

}  // namespace infervisor
