// events [--follow] [-n N] [--json]
#include <iostream>
#include <memory>

#include "commands.h"
#include "control/status_json.h"
#include "control/varlink_message.h"
#include "human_format.h"
#include "status_table.h"

namespace infervisor::cli {

namespace {

using nlohmann::json;

struct EventsArgs {
    bool follow = false;
    int lines = -1;  // -1: 100, or 10 with --follow
};

void print_event(const CliContext& ctx, const json& value) {
    if (ctx.json) {
        std::cout << dump_json(value) << std::endl;
        return;
    }
    std::cout << event_line(event_from_json(value)) << std::endl;  // flushed: --follow is read
                                                                   // by pipes too
}

void run_events(CliContext& ctx, const EventsArgs& args) {
    auto client = ctx.connect();
    if (!client) return;
    if (!args.follow) {
        auto reply = ctx.call(*client, "io.infervisor.supervisor.RecentEvents",
                              {{"limit", args.lines < 0 ? 100 : args.lines}});
        if (!reply) return;
        ctx.page();
        for (const auto& e : reply->parameters.value("events", json::array())) print_event(ctx, e);
        return;
    }
    auto last = client->call_more("io.infervisor.supervisor.Subscribe",
                                  {{"history", args.lines < 0 ? 10 : args.lines}},
                                  [&](const VarlinkReply& reply) {
                                      print_event(ctx, reply.parameters.value("event", json()));
                                      return true;
                                  });
    if (!last) return ctx.fail_transport(last.error());
    if (last->failed()) return ctx.fail_reply(*last);
}

}  // namespace

void add_events_command(CLI::App& app, CliContext& ctx) {
    auto args = std::make_shared<EventsArgs>();
    auto* events = app.add_subcommand("events", "Show lifecycle and policy events");
    events->add_flag("-f,--follow", args->follow, "Keep printing new events as they happen");
    events
        ->add_option("-n,--lines", args->lines,
                     "How many past events (default 100; 10 with --follow)")
        ->check(CLI::Range(0, 10000));
    events->add_flag("--json", ctx.json, "One JSON object per line");
    events->footer(
        "Examples:\n  infervisorctl events\n  infervisorctl events --follow\n"
        "  infervisorctl events -f -n 0 --json | jq -r 'select(.kind == \"oom_killed\") | "
        ".worker'");
    events->callback([&ctx, args] { run_events(ctx, *args); });
}

}  // namespace infervisor::cli
