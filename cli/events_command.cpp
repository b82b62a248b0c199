// events [NAME...] [--since WHEN] [--follow] [-n N] [--json]
#include <cerrno>
#include <chrono>
#include <iostream>
#include <memory>

#include "commands.h"
#include "control/status_json.h"
#include "control/varlink_message.h"
#include "human_format.h"
#include "status_table.h"
#include "time_spec.h"

namespace infervisor::cli {

namespace {

using nlohmann::json;

struct EventsArgs {
    std::vector<std::string> names;
    std::string since;
    bool follow = false;
    int lines = -1;  // -1: 100, or 10 with --follow
};

// As the text shows it: the journal's INFERVISOR_EVENT ("oom-killed"), not
// the Varlink enum's spelling ("oom_killed"), so that the text and the JSON
// name an event alike.
json printed_json(json value) {
    if (value.contains("kind") && value["kind"].is_string())
        value["kind"] = kind_from_varlink(value["kind"].get<std::string>());
    return value;
}

void print_event(const CliContext& ctx, const json& value) {
    if (ctx.json) {
        std::cout << dump_json(printed_json(value)) << std::endl;
        return;
    }
    std::cout << event_line(event_from_json(value)) << std::endl;  // flushed: --follow is read
                                                                   // by pipes too
}

uint64_t realtime_now_usec() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count());
}

// The daemon ends the stream when it stops or restarts: expected, so said
// and not an error (as journalctl -f ends on its interrupt).
bool stream_closed(const Error& error) { return error.code == ECONNRESET || error.code == EPIPE; }

void run_events(CliContext& ctx, const EventsArgs& args) {
    json query = json::object();
    if (!args.names.empty()) query["workers"] = args.names;
    if (!args.since.empty()) {
        auto since = parse_since(args.since, realtime_now_usec());
        if (!since) return ctx.fail(kUsage, "--since: " + since.error().message());
        query["since_usec"] = *since;
    }
    auto client = ctx.connect();
    if (!client) return;
    if (!args.follow) {
        query["limit"] = args.lines < 0 ? 100 : args.lines;
        auto reply = ctx.call(*client, "io.infervisor.supervisor.RecentEvents", query);
        if (!reply) return;
        auto events = reply->parameters.value("events", json::array());
        ctx.page();
        for (const auto& e : events) print_event(ctx, e);
        if (events.empty() && !ctx.json) std::cout << "-- No entries --\n";
        return;
    }
    query["history"] = args.lines < 0 ? 10 : args.lines;
    auto last = client->call_more("io.infervisor.supervisor.Subscribe", query,
                                  [&](const VarlinkReply& reply) {
                                      print_event(ctx, reply.parameters.value("event", json()));
                                      return true;
                                  });
    if (!last && stream_closed(last.error())) {
        std::cerr << "-- infervisord closed the connection (it stopped or restarted); "
                     "no more events --\n";
        return;
    }
    if (!last) return ctx.fail_transport(last.error());
    if (last->failed()) return ctx.fail_reply(*last);
}

}  // namespace

void add_events_command(CLI::App& app, CliContext& ctx) {
    auto args = std::make_shared<EventsArgs>();
    auto* events = app.add_subcommand("events", "Show lifecycle and policy events");
    events->add_option("NAME", args->names, "Only these workers' events (default: all)");
    events->add_option("-S,--since", args->since,
                       "Only events at or after WHEN: 10m, '2h ago', today, yesterday, "
                       "'2026-12-02 14:30', 14:30, @SECONDS");
    events->add_flag("-f,--follow", args->follow, "Keep printing new events as they happen");
    add_count_option(events, "-n,--lines", args->lines,
                     "How many past events (default 100; 10 with --follow)", 0, 10000);
    events->add_flag("--json", ctx.json, "One JSON object per line");
    events->footer(
        "The daemon keeps its last 1000 events, from its start on; older ones, and\n"
        "those of earlier daemon runs, are in the journal (journalctl -u infervisord).\n"
        "With --follow, the stream ends when the daemon stops or restarts (exit 0).\n\n"
        "Examples:\n  infervisorctl events\n  infervisorctl events llama --since 1h\n"
        "  infervisorctl events --follow\n"
        "  infervisorctl events -f -n 0 --json | jq -r 'select(.kind == \"oom-killed\") | "
        ".worker'");
    events->callback([&ctx, args] { run_events(ctx, *args); });
}

}  // namespace infervisor::cli
