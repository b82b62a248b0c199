// infervisorctl: the command-line client of infervisord's control socket.
#include <unistd.h>

#include <CLI/CLI.hpp>

#include "cli_context.h"
#include "commands.h"

using namespace infervisor::cli;

int main(int argc, char** argv) {
    CliContext ctx;
    ctx.colour = colour_wanted(STDOUT_FILENO);
    CLI::App app{"Control infervisord, the supervisor of AI inference workers.", "infervisorctl"};
    app.require_subcommand(1);
    app.fallthrough();  // --socket also after the command
    app.set_version_flag("--version", INFERVISOR_VERSION);
    app.add_option("--socket", ctx.socket, "The daemon's control socket")
        ->envname("INFERVISOR_SOCKET")
        ->capture_default_str();
    app.footer(
        "Exit codes: 0 success, 1 failure, 2 usage error, 3 unknown worker,\n"
        "4 daemon not running, 5 permission denied.\n"
        "Run 'infervisorctl COMMAND --help' for a command's options and examples.");
    add_status_commands(app, ctx);
    add_action_commands(app, ctx);
    add_events_command(app, ctx);
    add_logs_command(app, ctx);
    add_config_command(app, ctx);
    add_top_command(app, ctx);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        int code = app.exit(e);  // prints help/version (code 0) or the error
        return code == 0 ? kSuccess : kUsage;
    }
    return ctx.exit_code;
}
