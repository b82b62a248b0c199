// drain [--timeout D], undrain: maintenance of the whole host. A drain stops
// every start (by hand, by a restart, by a reload) and brings the workers
// down by their own methods; undrain starts again the workers that were up.
#include <cerrno>
#include <iostream>
#include <memory>

#include "commands.h"
#include "human_format.h"

namespace infervisor::cli {

namespace {

using nlohmann::json;

void run_drain(CliContext& ctx, const std::string& timeout_text) {
    if (!ctx.use_timeout(timeout_text)) return;
    auto client = ctx.connect();  // with the timeout
    if (!client) return;
    auto reply = client->call("io.infervisor.supervisor.Drain", json::object());
    if (!reply && reply.error().code == ETIMEDOUT)
        return ctx.fail(kFailure, "no answer within " + timeout_text +
                                      "; the host is drained and its workers are still coming "
                                      "down (infervisorctl status shows them)");
    if (!reply) return ctx.fail_transport(reply.error());
    if (!reply->error.empty()) return ctx.fail_reply(*reply);
    const json steps = reply->parameters.value("steps", json::array());
    if (ctx.json) {
        std::cout << dump_json({{"steps", steps}}, 2) << "\n";
        return;
    }
    for (const auto& step : steps)
        if (step.is_object())
            std::cout << printable(step.value("worker", "")) << ": "
                      << printable(step.value("how", "")) << "\n";
    if (steps.empty()) std::cout << "no worker was up\n";
    std::cout << "The host is drained: no worker starts until 'infervisorctl undrain'.\n";
}

void run_undrain(CliContext& ctx) {
    auto client = ctx.connect();
    if (!client) return;
    auto reply = ctx.call(*client, "io.infervisor.supervisor.Undrain");
    if (!reply) return;
    const json started = reply->parameters.value("started", json::array());
    if (ctx.json) {
        std::cout << dump_json({{"started", started}}, 2) << "\n";
        return;
    }
    if (started.empty())
        std::cout << "no worker to start (the host was not drained, or none was up)\n";
    for (const auto& name : started)
        if (name.is_string())
            std::cout << "starting " << printable(name.get<std::string>()) << "\n";
}

}  // namespace

void add_drain_commands(CLI::App& app, CliContext& ctx) {
    auto timeout = std::make_shared<std::string>();
    auto* drain = app.add_subcommand(
        "drain", "Maintenance: stop admitting starts, bring every worker down gently");
    drain->add_option("--timeout", *timeout,
                      "Wait at most this long for the workers to be down (e.g. 5m) [default: no "
                      "limit]");
    drain->footer(
        "From now on no worker starts: 'start' and 'restart' fail saying the host is\n"
        "drained, a worker that exits is not restarted, one a reload adds stays\n"
        "stopped. Every worker that is up comes down by its own method: checkpointed\n"
        "first where its checkpoints work (checkpoint.method criu or llama-server, or a\n"
        "cooperative worker that has answered a checkpoint since the daemon started or\n"
        "checkpoints periodically), then stopped with its stop signal; the others\n"
        "stopped. Prints how each went once all are down. The drain outlives a daemon\n"
        "restart, not a reboot: a host drained and rebooted comes back serving.\n"
        "'infervisorctl undrain' starts again the workers that were up.\n"
        "--json prints {steps: [{worker, how}]}.\n\n"
        "Examples:\n  infervisorctl drain && systemctl reboot\n"
        "  infervisorctl drain --timeout 10m");
    drain->callback([&ctx, timeout] { run_drain(ctx, *timeout); });

    auto* undrain = app.add_subcommand(
        "undrain", "End a drain: start again the workers that were up when it began");
    undrain->footer(
        "Starts them without waiting for them to be ready (infervisorctl status shows\n"
        "them coming up). --json prints {started: [NAME]}.\n\n"
        "Examples:\n  infervisorctl undrain");
    undrain->callback([&ctx] { run_undrain(ctx); });
}

}  // namespace infervisor::cli
