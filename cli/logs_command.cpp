// logs NAME [-f] [-n N] [-D DIR] [--json]: a worker's output, from the journal.
//
// Entries match INFERVISOR_WORKER=NAME (the daemon's structured events about
// the worker, and worker output it forwards with that field) or
// SYSLOG_IDENTIFIER=infervisor-worker-NAME (worker stdout/stderr).
#include <systemd/sd-journal.h>
#include <unistd.h>

#include <cstring>
#include <iostream>
#include <memory>

#include "commands.h"
#include "control/varlink_message.h"
#include "human_format.h"

namespace infervisor::cli {

namespace {

struct LogsArgs {
    std::string name;
    bool follow = false;
    int lines = -1;  // -1: all, or 10 with --follow
    std::string directory;
};

struct JournalCloser {
    void operator()(sd_journal* j) const { sd_journal_close(j); }
};
using Journal = std::unique_ptr<sd_journal, JournalCloser>;

std::string field(sd_journal* j, const char* name) {
    const void* data = nullptr;
    size_t length = 0;
    if (sd_journal_get_data(j, name, &data, &length) < 0) return {};
    std::string_view entry(static_cast<const char*>(data), length);
    auto eq = entry.find('=');
    return eq == std::string_view::npos ? std::string() : std::string(entry.substr(eq + 1));
}

void print_entry(const CliContext& ctx, sd_journal* j) {
    uint64_t usec = 0;
    sd_journal_get_realtime_usec(j, &usec);
    std::string identifier = field(j, "SYSLOG_IDENTIFIER");
    std::string pid = field(j, "_PID");
    std::string message = field(j, "MESSAGE");
    if (ctx.json) {
        nlohmann::json entry = {{"time_usec", usec},
                                {"identifier", identifier},
                                {"pid", pid},
                                {"priority", field(j, "PRIORITY")},
                                {"message", message}};
        std::cout << dump_json(entry) << std::endl;
        return;
    }
    std::cout << local_time(usec) << " " << identifier;
    if (!pid.empty()) std::cout << "[" << pid << "]";
    std::cout << ": " << printable(message) << std::endl;
}

int open_journal(const LogsArgs& args, Journal& journal) {
    sd_journal* j = nullptr;
    int r = args.directory.empty() ? sd_journal_open(&j, SD_JOURNAL_LOCAL_ONLY)
                                   : sd_journal_open_directory(&j, args.directory.c_str(), 0);
    if (r < 0) return r;
    journal.reset(j);
    std::string by_field = "INFERVISOR_WORKER=" + args.name;
    std::string by_identifier = "SYSLOG_IDENTIFIER=infervisor-worker-" + args.name;
    if ((r = sd_journal_add_match(j, by_field.data(), by_field.size())) < 0) return r;
    if ((r = sd_journal_add_disjunction(j)) < 0) return r;
    return sd_journal_add_match(j, by_identifier.data(), by_identifier.size());
}

// Positions the journal so that the next sd_journal_next() gives the first
// entry to print.
int position(sd_journal* j, int lines) {
    if (lines < 0) return sd_journal_seek_head(j);
    int r = sd_journal_seek_tail(j);
    if (r < 0) return r;
    // previous_skip(lines + 1) then next lands on the lines-th newest entry;
    // with fewer entries it stops at the first (and next gives the second),
    // so go back to the head then.
    r = sd_journal_previous_skip(j, static_cast<uint64_t>(lines) + 1);
    if (r >= 0 && r <= lines) return sd_journal_seek_head(j);
    return r;
}

// As journalctl: nothing found is said, not an empty screen; and when there
// were no journal files to read at all, why that may be.
void say_no_entries(sd_journal* j) {
    std::cout << "-- No entries --\n";
    uint64_t bytes = 0;
    if (sd_journal_get_usage(j, &bytes) < 0 || bytes > 0) return;
    std::cerr << "infervisorctl: no journal files were found"
              << (::geteuid() == 0 ? ""
                                   : " (the system journal needs root or the "
                                     "systemd-journal/adm group)")
              << "\n";
}

void run_logs(CliContext& ctx, const LogsArgs& args) {
    Journal journal;
    int lines = args.lines >= 0 ? args.lines : (args.follow ? 10 : -1);
    int r = open_journal(args, journal);
    if (r < 0)
        return ctx.fail(kFailure, "cannot open the journal" +
                                      (args.directory.empty() ? "" : " in " + args.directory) +
                                      ": " + std::strerror(-r));
    r = position(journal.get(), lines);
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
    if (printed == 0 && !ctx.json) say_no_entries(journal.get());
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
    logs->callback([&ctx, args] { run_logs(ctx, *args); });
}

}  // namespace infervisor::cli
