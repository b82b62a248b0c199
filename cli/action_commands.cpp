// start|stop|restart|checkpoint|suspend|resume NAME..., kill [--signal SIG]
// NAME...
#include <cerrno>
#include <iostream>
#include <memory>
#include <set>

#include "base/signal_names.h"
#include "commands.h"
#include "control/varlink_message.h"

namespace infervisor::cli {

namespace {

using nlohmann::json;

constexpr const char* kExitCodeSays =
    "its exit code says how it went, and 'infervisorctl status --json' what came of it";

struct KillArgs {
    std::vector<std::string> names;
    std::string signal = "TERM";
};

// The daemon's Kill takes one name: every name is looked up first, so that
// a typo signals none of them (as stop does).
void run_kill(CliContext& ctx, const KillArgs& args) {
    auto client = ctx.connect();
    if (!client) return;
    auto list = ctx.call(*client, "io.infervisor.supervisor.List");
    if (!list) return;
    std::set<std::string> known;
    for (const auto& w : list->parameters.value("workers", json::array()))
        if (w.is_object()) known.insert(w.value("name", ""));
    for (const auto& name : args.names)
        if (!known.count(name)) return ctx.fail(kUnknownWorker, "no worker named '" + name + "'");
    int signal = *parse_signal(args.signal);
    for (const auto& name : args.names)
        if (!ctx.call(*client, "io.infervisor.supervisor.Kill",
                      {{"name", name}, {"signal", signal}}))
            return;
}

// --timeout: how long to wait for the answer; past it the command says so
// and exits 1, and the daemon goes on with what it was asked.
struct NamesArgs {
    std::vector<std::string> names;
    std::string timeout;
};

void run_names_command(CliContext& ctx, const std::string& verb, const std::string& method,
                       const NamesArgs& args) {
    if (!ctx.use_timeout(args.timeout)) return;
    auto client = ctx.connect();  // with the timeout
    if (!client) return;
    auto reply = client->call(method, {{"names", args.names}});
    if (!reply && reply.error().code == ETIMEDOUT)
        return ctx.fail(kFailure, "no answer within " + args.timeout + "; the " + verb +
                                      " goes on in the daemon (infervisorctl events -f shows "
                                      "how it ends)");
    if (!reply) return ctx.fail_transport(reply.error());
    if (!reply->error.empty()) ctx.fail_reply(*reply);
}

void add_names_command(CLI::App& app, CliContext& ctx, const std::string& verb,
                       const std::string& method, const std::string& help,
                       const std::string& footer) {
    auto args = std::make_shared<NamesArgs>();
    auto* cmd = app.add_subcommand(verb, help);
    cmd->add_option("NAME", args->names, "Workers, by name")->required();
    cmd->add_option("--timeout", args->timeout,
                    "Wait at most this long for the answer (e.g. 30s, 5m) [default: no limit]");
    cmd->footer(footer);
    cmd->callback([&ctx, args, verb, method] {
        if (ctx.refuses_json(verb, kExitCodeSays)) return;
        run_names_command(ctx, verb, method, *args);
    });
}

}  // namespace

void add_action_commands(CLI::App& app, CliContext& ctx) {
    add_names_command(
        app, ctx, "start", "io.infervisor.supervisor.Start",
        "Start workers; waits until they run (or are ready)",
        "Exits 1 naming the first worker that did not start, and why (its command\n"
        "failed, it ended before it was ready, it waits for room on the host...).\n"
        "Examples:\n  infervisorctl start llama\n  infervisorctl start llama whisper");
    add_names_command(app, ctx, "stop", "io.infervisor.supervisor.Stop",
                      "Stop workers; waits until they have stopped",
                      "Examples:\n  infervisorctl stop llama");
    add_names_command(app, ctx, "restart", "io.infervisor.supervisor.Restart",
                      "Stop, then start workers; waits until they run again",
                      "Waits for each new run to be ready; fails as start does.\n"
                      "Examples:\n  infervisorctl restart llama whisper");
    add_names_command(app, ctx, "checkpoint", "io.infervisor.supervisor.Checkpoint",
                      "Ask workers for a checkpoint; waits until each is written",
                      "The workers keep running; their next start restores from it. Waits\n"
                      "up to each worker's checkpoint.timeout (2m by default; --timeout to\n"
                      "wait less). A worker whose process neither catches nor blocks its\n"
                      "checkpoint.signal is not sent it (the signal would end it): the\n"
                      "checkpoint fails with that reason.\n"
                      "Examples:\n  infervisorctl checkpoint llama\n"
                      "  infervisorctl checkpoint --timeout 30s llama");
    add_names_command(app, ctx, "suspend", "io.infervisor.supervisor.Suspend",
                      "Suspend workers: freeze them, push their memory out to swap",
                      "They keep their state (in swap) until resumed; waits until each\n"
                      "is suspended. Needs swap to give the host its memory back.\n"
                      "Examples:\n  infervisorctl suspend batch");
    add_names_command(app, ctx, "resume", "io.infervisor.supervisor.Resume",
                      "Resume suspended workers where they were",
                      "Examples:\n  infervisorctl resume batch");

    auto args = std::make_shared<KillArgs>();
    auto* kill = app.add_subcommand("kill", "Send a signal to every process of workers");
    kill->add_option("NAME", args->names, "Workers, by name")->required();
    kill->add_option("-s,--signal", args->signal, "Signal name or number (default TERM)")
        ->check([](const std::string& text) {
            return parse_signal(text) ? std::string() : "not a signal: " + text;
        });
    kill->footer(
        "All or nothing: when a name is unknown, no worker is signalled (exit 3).\n"
        "Examples:\n  infervisorctl kill llama\n  infervisorctl kill --signal KILL llama whisper\n"
        "  infervisorctl kill -s USR1 llama");
    kill->callback([&ctx, args] {
        if (ctx.refuses_json("kill", kExitCodeSays)) return;
        run_kill(ctx, *args);
    });
}

}  // namespace infervisor::cli
