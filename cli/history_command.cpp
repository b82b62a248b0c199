// history NAME [--json | --csv] [-n SAMPLES] [--width COLUMNS] [--height ROWS]
#include <sys/ioctl.h>
#include <unistd.h>

#include <iostream>
#include <memory>

#include "commands.h"
#include "control/varlink_message.h"
#include "history_chart.h"

namespace infervisor::cli {

namespace {

struct HistoryArgs {
    std::string name;
    bool csv = false;
    int samples = 1800;
    int width = 0;  // 0: the terminal's width (80 when not a terminal)
    int height = 10;
};

int terminal_width() {
    struct winsize ws {};
    if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    return 80;
}

void run_history(CliContext& ctx, const HistoryArgs& args) {
    auto client = ctx.connect();
    if (!client) return;
    auto reply = ctx.call(*client, "io.infervisor.supervisor.History",
                          {{"name", args.name}, {"limit", args.samples}});
    if (!reply) return;
    if (ctx.json) {
        std::cout << dump_json(reply->parameters) << std::endl;
        return;
    }
    if (args.csv) {
        std::cout << history_csv(reply->parameters);
        return;
    }
    ChartSize size{(args.width > 0 ? args.width : terminal_width()) - 10, args.height};
    for (const auto& line : draw_history(args.name, reply->parameters, size))
        std::cout << line << '\n';
}

}  // namespace

void add_history_command(CLI::App& app, CliContext& ctx) {
    auto args = std::make_shared<HistoryArgs>();
    auto* cmd = app.add_subcommand(
        "history", "Draw a worker's recent memory, pressure, swap and policy actions");
    cmd->add_option("name", args->name, "The worker")->required();
    cmd->add_flag("--json", ctx.json, "The samples and actions as JSON");
    cmd->add_flag("--csv", args->csv, "One CSV row per sample");
    add_count_option(cmd, "-n,--samples", args->samples, "Newest samples to show (default 1800)", 1,
                     3600);
    add_count_option(cmd, "--width", args->width, "Columns (default: the terminal's)", 20, 1000);
    add_count_option(cmd, "--height", args->height, "Rows of the memory chart (default 10)", 3,
                     100);
    cmd->footer(
        "The daemon keeps `metrics: history` of samples (default 1h) per worker.\n"
        "Examples:\n  infervisorctl history llama\n"
        "  infervisorctl history llama --csv > llama.csv");
    cmd->callback([&ctx, args] { run_history(ctx, *args); });
}

}  // namespace infervisor::cli
