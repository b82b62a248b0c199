// PolicyRunner: drives the pure PolicyEngine from the event loop. Every
// sample_interval, and at once when the host's memory PSI trigger fires, it
// samples each running worker and the host, asks the engine for decisions,
// and carries them out through the Worker (throttle, freeze, checkpoint —
// for now a clean stop —, kill) or only logs them in dry-run mode. Every
// decision is a `policy-action` journal entry with the rule, the action, the
// measured values and the result.
#pragma once

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <optional>

#include "config/daemon_config.h"
#include "policy/policy_engine.h"
#include "policy/psi_trigger.h"
#include "supervise/supervisor.h"

namespace infervisor {

class PolicyRunner {
public:
    PolicyRunner(WorkerContext& ctx, Supervisor& supervisor);

    // Takes the rules, host rules, dry-run flag and sampling interval of a
    // (new) configuration. Workers no longer configured are forgotten.
    void configure(const Config& config);
    // Starts the tick and the host PSI trigger (if the kernel offers one).
    void start();
    void stop();

    // One evaluation round; public for tests.
    void evaluate_now();

private:
    void arm_tick();
    void arm_psi();
    void execute(const Decision& decision);
    Result<void> carry_out(Worker& worker, const Decision& decision);

    WorkerContext& ctx_;
    Supervisor& supervisor_;
    PolicyEngine engine_;
    Duration interval_ = std::chrono::seconds(2);
    std::set<std::string> known_;
    boost::asio::steady_timer tick_;
    std::optional<PsiTrigger> psi_;
    std::unique_ptr<boost::asio::posix::stream_descriptor> psi_watch_;
    EventBus::SinkId subscription_ = 0;
    bool running_ = false;
};

}  // namespace infervisor
