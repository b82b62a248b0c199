// history NAME [--json | --csv] [-n SAMPLES] [--width COLUMNS] [--height ROWS]
// history --export FILE
#include <sys/ioctl.h>
#include <unistd.h>

#include <iostream>
#include <memory>

#include "base/file_io.h"
#include "commands.h"
#include "control/varlink_message.h"
#include "history_chart.h"
#include "history_json.h"
#include "metrics/worker_history.h"
#include "policy/policy_trace.h"
#include "trace_fetch.h"

namespace infervisor::cli {

namespace {

struct HistoryArgs {
    std::string name;
    bool csv = false;
    int samples = 1800;
    int width = 0;  // 0: the terminal's width (80 when not a terminal)
    int height = 10;
    std::string export_file;
};

// The daemon's whole recording into a file for `simulate --from`
// (policy_trace.h's file format), written whole or not at all.
void export_trace(CliContext& ctx, const std::string& file) {
    auto blocks = fetch_trace_blocks(ctx);
    if (!blocks) return;
    std::string content = encode_trace_file(*blocks);
    // What a reader will decode: a recording that does not decode is not
    // written as if it were one.
    if (auto decoded = decode_trace_file(content); !decoded)
        return ctx.fail(kFailure, "the daemon's recording: " + decoded.error().message());
    if (auto r = replace_file(file, content, 0644); !r)
        return ctx.fail(kFailure, "cannot write " + file + ": " + r.error().message());
    std::cerr << "wrote " << blocks->size() << " block(s), " << content.size() << " bytes, to "
              << file << "\n";
}

int terminal_width() {
    struct winsize ws {};
    if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    return 80;
}

void run_history(CliContext& ctx, const HistoryArgs& args) {
    if (!args.export_file.empty()) {
        if (!args.name.empty())
            return ctx.fail(kUsage, "--export writes every worker's recording: give no NAME");
        return export_trace(ctx, args.export_file);
    }
    if (args.name.empty())
        return ctx.fail(kUsage, "history: give a worker's NAME, or --export FILE");
    // A name the daemon does not know is an error (WorkerNotFound), not an
    // empty chart.
    auto client = ctx.connect();
    if (!client || !ctx.call(*client, "io.infervisor.supervisor.Get", {{"name", args.name}}))
        return;
    // The samples are those the daemon recorded for its policy (the Trace
    // call): its one copy of them, derived here (metrics/worker_history.h).
    auto trace = fetch_trace(ctx, *client, args.name);
    if (!trace) return;
    const nlohmann::json history =
        history_to_json(history_from_trace(*trace, args.name, static_cast<size_t>(args.samples)));
    if (ctx.json) {
        std::cout << dump_json(history) << std::endl;
        return;
    }
    if (args.csv) {
        std::cout << history_csv(history);
        return;
    }
    ChartSize size{(args.width > 0 ? args.width : terminal_width()) - 10, args.height};
    for (const auto& line : draw_history(args.name, history, size)) std::cout << line << '\n';
}

}  // namespace

void add_history_command(CLI::App& app, CliContext& ctx) {
    auto args = std::make_shared<HistoryArgs>();
    auto* cmd = app.add_subcommand(
        "history", "Draw a worker's recent memory, pressure, swap and policy actions");
    cmd->add_option("name", args->name, "The worker");
    cmd->add_option("--export", args->export_file,
                    "Write the daemon's recording of every worker and the host (what `simulate` "
                    "replays) to FILE");
    cmd->add_flag("--json", ctx.json, "The samples and actions as JSON");
    cmd->add_flag("--csv", args->csv, "One CSV row per sample");
    add_count_option(cmd, "-n,--samples", args->samples, "Newest samples to show (default 1800)", 1,
                     3600);
    add_count_option(cmd, "--width", args->width, "Columns (default: the terminal's)", 20, 1000);
    add_count_option(cmd, "--height", args->height, "Rows of the memory chart (default 10)", 3,
                     100);
    cmd->footer(
        "The daemon records `metrics: history` (default 1h) of its policy's samples of every\n"
        "worker and the host; this draws one worker's from that recording.\n"
        "Examples:\n  infervisorctl history llama\n"
        "  infervisorctl history llama --csv > llama.csv\n"
        "  infervisorctl history --export incident.trace   (for simulate --from)");
    cmd->callback([&ctx, args] { run_history(ctx, *args); });
}

}  // namespace infervisor::cli
