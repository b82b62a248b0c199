// status [NAME...], show NAME
#include <algorithm>
#include <iostream>
#include <memory>

#include "base/units.h"
#include "commands.h"
#include "control/status_json.h"
#include "hosts_status.h"
#include "status_table.h"

namespace infervisor::cli {

namespace {

using nlohmann::json;

struct StatusArgs {
    std::vector<std::string> names;
    std::string output;   // "" or "wide"
    std::string timeout;  // --timeout: "" is none (30s for each of several hosts)
};

constexpr std::size_t kEventsPerWorker = 5;

// The daemon's recent events, oldest first; none when it cannot say (an
// error reply). One call, however many workers are shown. The connection
// failed (or --timeout passed): said, and nullopt.
std::optional<std::vector<ControlEvent>> recent_events(CliContext& ctx, VarlinkClient& client) {
    auto reply = client.call("io.infervisor.supervisor.RecentEvents", {{"limit", 1000}});
    std::vector<ControlEvent> events;
    if (!reply) {
        ctx.fail_transport(reply.error());
        return std::nullopt;
    }
    if (!reply->error.empty()) return events;
    for (const auto& item : reply->parameters.value("events", json::array()))
        events.push_back(event_from_json(item));
    return events;
}

// The newest kEventsPerWorker of `events` that are `name`'s, oldest first.
std::vector<ControlEvent> events_of(const std::vector<ControlEvent>& events,
                                    const std::string& name) {
    std::vector<ControlEvent> mine;
    for (const auto& e : events)
        if (e.worker == name) mine.push_back(e);
    if (mine.size() > kEventsPerWorker)
        mine.erase(mine.begin(), mine.end() - static_cast<long>(kEventsPerWorker));
    return mine;
}

// Whether the daemon says the host is drained (infervisorctl drain); an
// older daemon without HostState says nothing, which reads as no. The
// connection failed (or --timeout passed): said, and nullopt.
std::optional<bool> host_drained(CliContext& ctx, VarlinkClient& client) {
    auto reply = client.call("io.infervisor.supervisor.HostState", json::object());
    if (!reply) {
        ctx.fail_transport(reply.error());
        return std::nullopt;
    }
    return reply->error.empty() && reply->parameters.value("drained", false);
}

}  // namespace

Result<std::vector<GpuCardView>> host_gpus(VarlinkClient& client) {
    auto reply = client.call("io.infervisor.supervisor.ListGpus", json::object());
    if (!reply) return reply.error();
    std::vector<GpuCardView> cards;
    if (!reply->error.empty()) return cards;  // an older daemon: MethodNotFound
    for (const auto& item : reply->parameters.value("gpus", json::array()))
        cards.push_back(gpu_card_from_json(item));
    return cards;
}

namespace {

void run_status(CliContext& ctx, const StatusArgs& args) {
    if (!ctx.use_timeout(args.timeout)) return;
    if (ctx.hosts.size() > 1) {
        HostsDeadline deadline{
            ctx.answer_timeout.value_or(kHostsTimeout),
            args.timeout.empty() ? format_duration(kHostsTimeout) : args.timeout};
        return run_status_on_hosts(ctx, args.names,
                                   args.output == "wide" ? TableWidth::wide : TableWidth::narrow,
                                   deadline);
    }
    auto client = ctx.connect();
    if (!client) return;
    auto reply = ctx.call(*client, "io.infervisor.supervisor.List");
    if (!reply) return;
    json shown = json::array();
    std::vector<WorkerView> workers;
    for (const auto& item : reply->parameters.value("workers", json::array())) {
        auto status = worker_view_from_json(item);
        if (!args.names.empty() &&
            std::find(args.names.begin(), args.names.end(), status.name) == args.names.end())
            continue;
        shown.push_back(item);
        workers.push_back(std::move(status));
    }
    // Named workers: a block each (with its events), as `systemctl status
    // UNIT`; else the table and, under it, what the table has no room for.
    std::vector<ControlEvent> events;
    if (!ctx.json && !args.names.empty()) {
        auto recent = recent_events(ctx, *client);
        if (!recent) return;
        events = std::move(*recent);
    }
    auto is_drained = host_drained(ctx, *client);
    if (!is_drained) return;
    const bool drained = *is_drained;
    ctx.page();
    if (!ctx.json && drained)
        std::cout << "The host is drained (infervisorctl drain): no worker starts until "
                     "'infervisorctl undrain'.\n\n";
    auto gpus = host_gpus(*client);
    if (!gpus) return ctx.fail_transport(gpus.error());
    const std::vector<GpuCardView>& cards = *gpus;
    if (ctx.json) {
        json out = {{"workers", shown}, {"drained", drained}};
        if (!cards.empty()) {
            out["gpus"] = json::array();
            for (const auto& card : cards) out["gpus"].push_back(to_json(card));
        }
        std::cout << dump_json(out, 2) << "\n";
    } else if (!args.names.empty()) {
        for (std::size_t i = 0; i < workers.size(); ++i) {
            if (i > 0) std::cout << "\n";
            print_worker_block(std::cout, workers[i], events_of(events, workers[i].name),
                               ctx.colour);
        }
    } else {
        auto width = args.output == "wide" ? TableWidth::wide : TableWidth::narrow;
        print_status_table(std::cout, workers, ctx.colour, ctx.legend, width);
        if (width == TableWidth::narrow && ctx.legend) print_status_notes(std::cout, workers);
        if (ctx.legend) print_gpu_cards(std::cout, cards);
    }
    // As `systemctl status UNIT...`: 3 when a named worker is unknown or not running.
    for (const auto& name : args.names) {
        auto it = std::find_if(workers.begin(), workers.end(),
                               [&](const WorkerView& w) { return w.name == name; });
        if (it == workers.end())
            ctx.fail(kUnknownWorker, "no worker named '" + name + "'");
        else if (it->state != "running")
            ctx.exit_code = kWorkerNotRunning;
    }
}

void run_show(CliContext& ctx, const std::string& name) {
    auto client = ctx.connect();
    if (!client) return;
    auto reply = ctx.call(*client, "io.infervisor.supervisor.Get", {{"name", name}});
    if (!reply) return;
    if (ctx.json) {
        ctx.page();
        std::cout << dump_json(reply->parameters, 2) << "\n";
        return;
    }
    WorkerDetail detail{worker_view_from_json(reply->parameters.value("worker", json())),
                        reply->parameters.value("spec", json::object())};
    auto events = recent_events(ctx, *client);
    if (!events) return;
    ctx.page();
    print_worker_detail(std::cout, detail, events_of(*events, name), ctx.colour);
}

}  // namespace

void add_status_commands(CLI::App& app, CliContext& ctx) {
    auto args = std::make_shared<StatusArgs>();
    auto* status = app.add_subcommand("status", "Show the workers' state and measurements");
    status->add_option("NAME", args->names, "Only these workers");
    status->add_flag("--json", ctx.json, "Print the daemon's reply as JSON");
    status
        ->add_option("-o,--output", args->output,
                     "'wide': the table with every column (HIGH, SWAP, PROBES, LAST EXIT) "
                     "and each state's reason")
        ->check(CLI::IsMember({"wide"}));
    status->add_option("--timeout", args->timeout,
                       "How long to wait for the daemon's answer, ssh's connection included "
                       "(none by default; with several -H, each host's: 30s by default)");
    status->footer(
        "Without NAMEs: a table that fits 80 columns, then a line for each worker whose\n"
        "state has a reason or whose probes do not pass. With NAMEs: each worker's state,\n"
        "why and since when, what would change it, its process, memory and newest events.\n"
        "A * after a name marks a protected worker. HIGH/MAX/SWAP are the cgroup limits;\n"
        "PSI10 is memory pressure (some, avg10, percent).\n"
        "Exit code: 0; with NAMEs, 3 if one of them is unknown or not running.\n\n"
        "Examples:\n"
        "  infervisorctl status\n"
        "  infervisorctl status -o wide\n"
        "  infervisorctl status llama whisper\n"
        "  infervisorctl status --json | jq '.workers[] | select(.state == \"failed\")'");
    status->callback([&ctx, args] { run_status(ctx, *args); });

    auto name = std::make_shared<std::string>();
    auto* show = app.add_subcommand("show", "Show one worker in detail, with its configuration");
    show->add_option("NAME", *name, "The worker")->required();
    show->add_flag("--json", ctx.json, "Print the daemon's reply as JSON");
    show->footer("Examples:\n  infervisorctl show llama\n  infervisorctl show llama --json");
    show->callback([&ctx, name] { run_show(ctx, *name); });
}

}  // namespace infervisor::cli
