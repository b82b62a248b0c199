// remove-workdir NAME [--yes | --dry-run]: deletes a removed worker's work
// dir. It asks first on a terminal (the dir may hold downloaded weights or
// a checkpoint); elsewhere it needs --yes, so that a script says it means it.
#include <iostream>
#include <memory>

#include "commands.h"
#include "confirm.h"

namespace infervisor::cli {

namespace {

using nlohmann::json;

struct RemoveArgs {
    std::string name;
    bool yes = false;
    bool dry_run = false;
};

constexpr const char* kMethod = "io.infervisor.supervisor.RemoveWorkDir";

// Whether to go on, after the daemon's preview: asked on a terminal.
bool confirmed(CliContext& ctx, const RemoveArgs& args, const std::string& path) {
    auto answer = ask_yes_no("Delete " + path + ", the work dir of removed worker '" + args.name +
                             "', and everything in it?");
    if (!answer) {
        ctx.fail(kUsage, "remove-workdir would delete " + path +
                             "; stdin is not a terminal to ask on: pass --yes to delete it");
        return false;
    }
    if (!*answer) {
        std::cerr << "nothing removed\n";
        ctx.exit_code = kFailure;
    }
    return *answer;
}

void run_remove_workdir(CliContext& ctx, const RemoveArgs& args) {
    auto client = ctx.connect();
    if (!client) return;
    if (args.dry_run || !args.yes) {
        auto preview = ctx.call(*client, kMethod, {{"name", args.name}, {"dry_run", true}});
        if (!preview) return;
        std::string path = preview->parameters.value("path", "");
        if (!preview->parameters.value("existed", false)) {
            std::cout << "no work dir at " << path << "; nothing to remove\n";
            return;
        }
        if (args.dry_run) {
            std::cout << "would remove " << path << "\n";
            return;
        }
        if (!confirmed(ctx, args, path)) return;
    }
    auto reply = ctx.call(*client, kMethod, {{"name", args.name}});
    if (!reply) return;
    std::string path = reply->parameters.value("path", "");
    if (reply->parameters.value("existed", false))
        std::cout << "removed " << path << "\n";
    else
        std::cout << "no work dir at " << path << "; nothing to remove\n";
}

}  // namespace

void add_remove_workdir_command(CLI::App& app, CliContext& ctx) {
    auto args = std::make_shared<RemoveArgs>();
    auto* remove = app.add_subcommand(
        "remove-workdir", "Delete the work dir of a worker that is no longer configured");
    remove->add_option("NAME", args->name, "The removed worker")->required();
    auto* yes = remove->add_flag("-y,--yes", args->yes, "Delete without asking");
    remove->add_flag("--dry-run", args->dry_run, "Say which dir would be deleted; delete nothing")
        ->excludes(yes);
    remove->footer(
        "Work dirs are kept when a worker leaves the configuration. This deletes the\n"
        "one of a removed worker: the work dir of its last configuration, or\n"
        "/var/lib/infervisor/workers/NAME if the daemon has not run it since it started.\n"
        "Refused while a worker of that name is configured or running. Extra dirs\n"
        "are never deleted. Needs root or the daemon's control group.\n"
        "On a terminal it names the dir and asks first; elsewhere (a script) it needs\n"
        "--yes, and exits 2 without it. Declining exits 1.\n\n"
        "Examples:\n  infervisorctl remove-workdir old-llama\n"
        "  infervisorctl remove-workdir --dry-run old-llama\n"
        "  infervisorctl remove-workdir --yes old-llama");
    remove->callback([&ctx, args] {
        if (ctx.refuses_json("remove-workdir",
                             "its exit code says how it went, and its output which dir"))
            return;
        run_remove_workdir(ctx, *args);
    });
}

}  // namespace infervisor::cli
