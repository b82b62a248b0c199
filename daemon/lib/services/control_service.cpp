#include "services/control_service.h"

#include <spdlog/spdlog.h>

#include "control/access_policy.h"
#include "control/control_socket.h"

namespace infervisor {

ControlService::ControlService(WorkerContext& ctx, Supervisor& supervisor,
                               SupervisorService::ReloadFunction reload,
                               SupervisorService::TraceSource trace)
    : ctx_(ctx),
      supervisor_(supervisor),
      reload_(std::move(reload)),
      trace_(std::move(trace)),
      recorder_(ctx.events) {}

ControlService::~ControlService() { stop(); }

void ControlService::configure(const Config& config) {
    control_group_ = config.daemon.control_group;
}

void ControlService::start() {
    if (running_) return;
    running_ = true;
    server_.reset();  // it refers to the service
    service_ = std::make_unique<SupervisorService>(ctx_, supervisor_, recorder_.ring(), reload_);
    service_->set_trace_source(trace_);
    ControlServerOptions options;
    options.path = control_socket_path(ctx_.paths);
    if (auto gid = lookup_group(control_group_))
        options.control_group = *gid;
    else
        spdlog::warn("control group '{}': {}; only root may change things over the socket",
                     control_group_, gid.error().message());
    server_ = std::make_unique<ControlServer>(ctx_.io, *service_, options);
    if (auto r = server_->start(); !r)
        spdlog::error("control socket {}: {}", options.path.string(), r.error().message());
    else
        spdlog::info("control socket {}", options.path.string());
}

void ControlService::stop() {
    running_ = false;
    if (server_) server_->stop();
}

}  // namespace infervisor
