// infervisorctl: the command-line client of infervisord's control socket.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cctype>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "base/closest_match.h"
#include "cli_context.h"
#include "commands.h"

using namespace infervisor::cli;

namespace {

// The first word that is not an option (or --socket's or -H's value), or "".
std::string_view command_word(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        std::string_view arg = argv[i];
        if (arg == "--socket" || arg == "-H" || arg == "--host") {
            ++i;
            continue;
        }
        if (arg == "--") return i + 1 < argc ? argv[i + 1] : "";
        if (!arg.empty() && arg[0] != '-') return arg;
    }
    return "";
}

bool is_command(const CLI::App& app, std::string_view word) {
    for (const auto* sub : app.get_subcommands([](const CLI::App*) { return true; }))
        if (sub->check_name(std::string(word))) return true;
    return false;
}

// "infervisorctl: unknown command 'statsu' (did you mean 'status'?)", with
// the hint only when one command is that near.
std::string unknown_command_message(const CLI::App& app, std::string_view word) {
    std::vector<std::string> names;
    for (const auto* sub : app.get_subcommands([](const CLI::App*) { return true; }))
        names.push_back(sub->get_name());
    std::string message = "infervisorctl: unknown command '" + std::string(word) + "'";
    if (auto meant = infervisor::closest_match(word, names))
        message += " (did you mean '" + *meant + "'?)";
    return message + " (see 'infervisorctl --help')\n";
}

// " (did you mean '--json'?)" for the first unexpected --option of the
// command line that is near one the command takes (its own, or a global
// one: those are taken after the command too); else "".
std::string option_hint(const CLI::App& command, const CLI::App& top) {
    std::vector<std::string> names;
    for (const CLI::App* app : {&command, &top})
        for (const auto* option : app->get_options())
            for (const auto& name : option->get_lnames()) names.push_back("--" + name);
    // (With fallthrough, what the command did not take is left over at the top.)
    std::vector<std::string> left_over = top.remaining();
    for (const auto& arg : command.remaining()) left_over.push_back(arg);
    for (const auto& arg : left_over) {
        if (arg.rfind("--", 0) != 0) continue;
        std::string word = arg.substr(0, arg.find('='));
        if (auto meant = infervisor::closest_match(word, names))
            return " (did you mean '" + *meant + "'?)";
    }
    return "";
}

// CLI11's parse errors as our own: "infervisorctl: " first, a did-you-mean
// for a misspelt option, and which command's --help to read.
std::string failure_message(const CLI::App* app, const CLI::Error& e) {
    std::string command = "infervisorctl";
    const CLI::App* innermost = app;
    for (const auto* sub : app->get_subcommands()) {
        command += " " + sub->get_name();
        innermost = sub;
    }
    std::string what = e.what();
    if (!what.empty())
        what[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(what[0])));
    if (dynamic_cast<const CLI::ExtrasError*>(&e)) what += option_hint(*innermost, *app);
    return "infervisorctl: " + what + "\n(see '" + command + " --help')\n";
}

}  // namespace

int main(int argc, char** argv) {
    CliContext ctx;
    ctx.colour = colour_wanted(STDOUT_FILENO);
    // Set by a multi-host status for its per-host runs (hosts_status.h).
    ctx.batch_ssh = std::getenv("INFERVISOR_SSH_BATCH") != nullptr;
    CLI::App app{"Control infervisord, the supervisor of AI inference workers.", "infervisorctl"};
    app.require_subcommand(1);
    app.failure_message(failure_message);
    app.fallthrough();  // the global options also after the command
    app.set_version_flag("--version", INFERVISOR_VERSION);
    app.add_option("--socket", ctx.socket, "The daemon's control socket")
        ->envname("INFERVISOR_SOCKET")
        ->capture_default_str();
    app.add_option("-H,--host", ctx.hosts,
                   "The daemon on [USER@]HOST[:PORT], through ssh (as systemctl -H); repeat it "
                   "for 'status' on several hosts")
        ->take_all()
        ->allow_extra_args(false);
    app.add_flag(
        "--json", ctx.json,
        "Print JSON (status, show, events, logs, history, checkpoints, config check, reload)");
    app.add_flag("--no-pager{false}", ctx.use_pager,
                 "Do not pipe long output into a pager ($SYSTEMD_PAGER, $PAGER, less)");
    app.add_flag("--no-legend{false}", ctx.legend, "Print tables without their header line");
    app.footer(
        "Exit codes: 0 success, 1 failure, 2 usage error, 3 unknown worker (status: or\n"
        "a named worker not running), 4 daemon not running (or, with -H, the host not\n"
        "reachable), 5 permission denied.\n"
        "Run 'infervisorctl COMMAND --help' for a command's options and examples.");
    add_status_commands(app, ctx);
    add_action_commands(app, ctx);
    add_reload_command(app, ctx);
    add_remove_workdir_command(app, ctx);
    add_checkpoints_command(app, ctx);
    add_events_command(app, ctx);
    add_history_command(app, ctx);
    add_simulate_command(app, ctx);
    add_drain_commands(app, ctx);
    add_logs_command(app, ctx);
    add_config_command(app, ctx);
    add_top_command(app, ctx);
    if (auto word = command_word(argc, argv); !word.empty() && !is_command(app, word)) {
        std::cerr << unknown_command_message(app, word);
        return kUsage;
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        int code = app.exit(e);  // prints help/version (code 0) or the error
        return code == 0 ? kSuccess : kUsage;
    }
    return ctx.exit_code;
}
