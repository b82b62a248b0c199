// logs NAME [-f] [-n N] [-D DIR] [--json]: a worker's output, from the journal.
//
// Entries match INFERVISOR_WORKER=NAME (the daemon's structured events about
// the worker, and worker output it forwards with that field) or
// SYSLOG_IDENTIFIER=infervisor-worker-NAME (worker stdout/stderr).
#include <cstring>
#include <iostream>
#include <memory>

#include "commands.h"
#include "control/varlink_message.h"
#include "human_format.h"
#include "journal_files.h"

namespace infervisor::cli {

namespace {

struct LogsArgs {
    std::string name;
    bool follow = false;
    int lines = -1;  // -1: all, or 10 with --follow
    std::string directory;
};

void print_entry(const CliContext& ctx, sd_journal* j) {
    uint64_t usec = 0;
    sd_journal_get_realtime_usec(j, &usec);
    std::string identifier = journal_field(j, "SYSLOG_IDENTIFIER");
    std::string pid = journal_field(j, "_PID");
    std::string message = journal_field(j, "MESSAGE");
    if (ctx.json) {
        nlohmann::json entry = {{"time_usec", usec},
                                {"identifier", identifier},
                                {"pid", pid},
                                {"priority", journal_field(j, "PRIORITY")},
                                {"message", message}};
        std::cout << dump_json(entry) << std::endl;
        return;
    }
    std::cout << local_time(usec) << " " << identifier;
    if (!pid.empty()) std::cout << "[" << pid << "]";
    std::cout << ": " << printable(message) << std::endl;
}

// Entries with INFERVISOR_WORKER=NAME or SYSLOG_IDENTIFIER=infervisor-worker-NAME.
int open_worker_journal(const LogsArgs& args, Journal& journal) {
    int r = open_journal(args.directory, journal);
    if (r < 0) return r;
    sd_journal* j = journal.get();
    std::string by_field = "INFERVISOR_WORKER=" + args.name;
    std::string by_identifier = "SYSLOG_IDENTIFIER=infervisor-worker-" + args.name;
    if ((r = sd_journal_add_match(j, by_field.data(), by_field.size())) < 0) return r;
    if ((r = sd_journal_add_disjunction(j)) < 0) return r;
    return sd_journal_add_match(j, by_identifier.data(), by_identifier.size());
}

void run_logs(CliContext& ctx, const LogsArgs& args) {
    Journal journal;
    int lines = args.lines >= 0 ? args.lines : (args.follow ? 10 : -1);
    int r = open_worker_journal(args, journal);
    if (r < 0)
        return ctx.fail(kFailure, "cannot open the journal" +
                                      (args.directory.empty() ? "" : " in " + args.directory) +
                                      ": " + std::strerror(-r));
    r = position_journal(journal.get(), lines);
    if (r >= 0 && !args.follow) ctx.page();
    size_t printed = 0;
    while (r >= 0) {
        while ((r = sd_journal_next(journal.get())) > 0) {
            print_entry(ctx, journal.get());
            ++printed;
        }
        if (r < 0 || !args.follow) break;
        r = sd_journal_wait(journal.get(), static_cast<uint64_t>(-1));
    }
    if (r < 0) return ctx.fail(kFailure, std::string("reading the journal: ") + std::strerror(-r));
    if (printed == 0 && !ctx.json) say_no_journal_entries(journal.get());
}

}  // namespace

void add_logs_command(CLI::App& app, CliContext& ctx) {
    auto args = std::make_shared<LogsArgs>();
    auto* logs = app.add_subcommand("logs", "Show a worker's output and events from the journal");
    logs->add_option("NAME", args->name, "The worker")->required();
    logs->add_flag("-f,--follow", args->follow, "Keep printing new entries");
    add_count_option(logs, "-n,--lines", args->lines, "Show only the newest N entries (10 with -f)",
                     0, 1000000);
    logs->add_option("-D,--directory", args->directory,
                     "Read journal files from this directory instead of the system journal");
    logs->add_flag("--json", ctx.json, "One JSON object per line");
    logs->footer(
        "Reads the journal directly (the daemon need not run). Matches entries with\n"
        "INFERVISOR_WORKER=NAME or SYSLOG_IDENTIFIER=infervisor-worker-NAME; reading the\n"
        "system journal needs root or the systemd-journal/adm group.\n\n"
        "Examples:\n  infervisorctl logs llama\n  infervisorctl logs -f -n 50 llama\n"
        "  journalctl INFERVISOR_WORKER=llama   # the same entries, with journalctl");
    logs->callback([&ctx, args] {
        if (ctx.refuses_hosts("logs", "this machine's journal")) return;
        run_logs(ctx, *args);
    });
}

}  // namespace infervisor::cli
