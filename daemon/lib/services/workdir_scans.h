// WorkdirScans: the Supervisor's WorkDirMonitor (supervise/workdir_monitor.h:
// work dir usage against workdir_quota, deletions in protected dirs) as a
// daemon service. The monitor stays with the Supervisor, which tells it of
// every worker; this is only its lifecycle.
#pragma once

#include "services/service.h"
#include "supervise/supervisor.h"

namespace infervisor {

class WorkdirScans final : public Service {
  public:
    explicit WorkdirScans(Supervisor& supervisor) : monitor_(supervisor.workdir_monitor()) {}

    std::string_view name() const override { return "work dir scans"; }
    // workdir_scan_interval
    void configure(const Config& config) override;
    void start() override;
    void stop() override;

  private:
    WorkDirMonitor& monitor_;
    Duration interval_{std::chrono::minutes(1)};
};

}  // namespace infervisor
