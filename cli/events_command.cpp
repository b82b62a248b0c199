// events [NAME...] [--since WHEN] [--follow] [-n N] [-D DIR [--hostname H...]] [--json]
//
// From the daemon (RecentEvents, Subscribe), or with -D from journal files:
// a collector's systemd-journal-remote directory holds every host's events,
// and --hostname picks hosts by the entries' _HOSTNAME.
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <memory>

#include "commands.h"
#include "control/status_json.h"
#include "control/varlink_message.h"
#include "human_format.h"
#include "journal_events.h"
#include "journal_files.h"
#include "status_table.h"
#include "time_spec.h"

namespace infervisor::cli {

namespace {

using nlohmann::json;

struct EventsArgs {
    std::vector<std::string> names;
    std::string since;
    bool follow = false;
    int lines = -1;                      // -1: 100, or 10 with --follow
    std::string directory;               // -D: journal files instead of the daemon
    std::vector<std::string> hostnames;  // --hostname: with -D, these hosts' only
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

// An event read from journal files: as the daemon's, with the host added
// (the JSON's "host" member; in the text, after the time).
void print_journal_event(const CliContext& ctx, const JournalEvent& read) {
    if (ctx.json) {
        json value = printed_json(to_json(read.event));
        value["host"] = read.host;
        std::cout << dump_json(value) << std::endl;
        return;
    }
    std::cout << event_line(read.event, read.host) << std::endl;
}

uint64_t realtime_now_usec() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count());
}

// The daemon ends the stream when it stops or restarts: expected, so said
// and not an error (as journalctl -f ends on its interrupt).
bool stream_closed(const Error& error) { return error.code == ECONNRESET || error.code == EPIPE; }

// -D: the newest `lines` matching entries (those before --since left out:
// the newest N at or after it are among the newest N), then, with
// --follow, new ones as they are written.
void run_journal_events(CliContext& ctx, const EventsArgs& args, uint64_t since_usec) {
    Journal journal;
    int r = open_journal(args.directory, journal);
    if (r >= 0) r = add_event_matches(journal.get(), args.names, args.hostnames);
    if (r < 0)
        return ctx.fail(kFailure,
                        "cannot open the journal in " + args.directory + ": " + std::strerror(-r));
    r = position_journal(journal.get(), args.lines < 0 ? (args.follow ? 10 : 100) : args.lines);
    if (r >= 0 && !args.follow) ctx.page();
    size_t printed = 0;
    while (r >= 0) {
        while ((r = sd_journal_next(journal.get())) > 0) {
            auto read = read_journal_event(journal.get());
            if (read.event.time_usec < since_usec) continue;
            print_journal_event(ctx, read);
            ++printed;
        }
        if (r < 0 || !args.follow) break;
        r = sd_journal_wait(journal.get(), static_cast<uint64_t>(-1));
    }
    if (r < 0) return ctx.fail(kFailure, std::string("reading the journal: ") + std::strerror(-r));
    if (printed == 0 && !ctx.json && !args.follow) say_no_journal_entries(journal.get());
}

void run_events(CliContext& ctx, const EventsArgs& args) {
    json query = json::object();
    if (!args.names.empty()) query["workers"] = args.names;
    uint64_t since_usec = 0;
    if (!args.since.empty()) {
        auto since = parse_since(args.since, realtime_now_usec());
        if (!since) return ctx.fail(kUsage, "--since: " + since.error().message());
        query["since_usec"] = since_usec = *since;
    }
    if (!args.directory.empty()) return run_journal_events(ctx, args, since_usec);
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
    auto* directory =
        events->add_option("-D,--directory", args->directory,
                           "Read the events from the journal files in DIR (e.g. a collector's "
                           "/var/log/journal/remote) instead of asking the daemon");
    events
        ->add_option("--hostname", args->hostnames,
                     "With -D: only the events of this host (the entries' _HOSTNAME); "
                     "may be repeated")
        ->allow_extra_args(false)  // one name each: `--hostname h1 llama` names a worker
        ->needs(directory);
    events->add_flag("--json", ctx.json, "One JSON object per line");
    events->footer(
        "The daemon keeps its last 1000 events, from its start on; older ones, and\n"
        "those of earlier daemon runs, are in the journal (journalctl -u infervisord).\n"
        "With --follow, the stream ends when the daemon stops or restarts (exit 0).\n"
        "With -D, the events come from journal files (the daemon need not run), each\n"
        "with the host that logged it; --follow then waits for new entries.\n\n"
        "Examples:\n  infervisorctl events\n  infervisorctl events llama --since 1h\n"
        "  infervisorctl events --follow\n"
        "  infervisorctl events -D /var/log/journal/remote --hostname gpu-a\n"
        "  infervisorctl events -f -n 0 --json | jq -r 'select(.kind == \"oom-killed\") | "
        ".worker'");
    events->callback([&ctx, args] {
        if (!args->directory.empty() &&
            ctx.refuses_hosts("events -D", "journal files on this machine"))
            return;
        run_events(ctx, *args);
    });
}

}  // namespace infervisor::cli
