// ControlService: the control socket (control/control_server.h) serving the
// Supervisor (SupervisorService) as a daemon service. The socket's path comes
// from the runtime dir, who may change things from `control_group`.
// Failing to create the socket is logged, not fatal: workers are supervised
// all the same. It keeps the daemon's recent events from its construction
// (EventRecorder), so a socket started later still has those of start-up.
#pragma once

#include <memory>

#include "control/control_server.h"
#include "services/event_recorder.h"
#include "services/service.h"
#include "services/supervisor_service.h"

namespace infervisor {

class ControlService final : public Service {
  public:
    ControlService(WorkerContext& ctx, Supervisor& supervisor,
                   SupervisorService::ReloadFunction reload, SupervisorService::TraceSource trace);
    ~ControlService() override;

    std::string_view name() const override { return "control socket"; }
    // control_group, for the next start() (a running socket keeps the group
    // it was started with, as before: it changes with a restart).
    void configure(const Config& config) override;
    void start() override;
    void stop() override;

  private:
    WorkerContext& ctx_;
    Supervisor& supervisor_;
    SupervisorService::ReloadFunction reload_;
    SupervisorService::TraceSource trace_;
    EventRecorder recorder_;  // from the construction on: the events of start-up too
    std::string control_group_;
    std::unique_ptr<SupervisorService> service_;
    std::unique_ptr<ControlServer> server_;
    bool running_ = false;
};

}  // namespace infervisor
