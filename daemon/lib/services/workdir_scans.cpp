#include "services/workdir_scans.h"

namespace infervisor {

void WorkdirScans::configure(const Config& config) {
    interval_ = config.daemon.workdir_scan_interval;
    monitor_.set_scan_interval(interval_);
}

void WorkdirScans::start() { monitor_.start(interval_); }

void WorkdirScans::stop() { monitor_.stop(); }

}  // namespace infervisor
