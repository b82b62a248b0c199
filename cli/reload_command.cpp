// reload [--dry-run [--simulate]]: the daemon rereads its configuration files
// and applies them, or (--dry-run) says what applying them would change and
// (--simulate) what their rules would have done over the last hour.
#include <iostream>
#include <memory>

#include "commands.h"

namespace infervisor::cli {

namespace {

using nlohmann::json;

struct Change {
    const char* key;      // in the reply
    const char* preview;  // what --dry-run says
};
constexpr Change kChanges[] = {
    {"added", "would add"}, {"removed", "would remove"}, {"changed", "would change"}};

void print_changes(const json& reply, bool dry_run) {
    bool any = false;
    for (const auto& change : kChanges)
        for (const auto& name : reply.value(change.key, json::array()))
            if (name.is_string()) {
                any = true;
                std::cout << (dry_run ? change.preview : change.key) << " "
                          << name.get<std::string>() << "\n";
            }
    if (dry_run && !any) std::cout << "no worker would change\n";
    for (const auto& warning : reply.value("warnings", json::array()))
        if (warning.is_string()) std::cerr << "warning: " << warning.get<std::string>() << "\n";
    if (dry_run) std::cerr << "dry run: nothing was applied\n";
}

struct ReloadArgs {
    bool dry_run = false;
    bool simulate = false;
};

// The files a reload reads, as this client finds them (the daemon's default
// path): what --simulate replays the last hour with.
constexpr const char* kSimulateSince = "1h";

void run_reload(CliContext& ctx, const ReloadArgs& args) {
    bool dry_run = args.dry_run;
    if (args.simulate && !dry_run) return ctx.fail(kUsage, "--simulate goes with --dry-run");
    auto client = ctx.connect();
    if (!client) return;
    json parameters = json::object();
    if (dry_run) parameters["dry_run"] = true;
    auto reply = ctx.call(*client, "io.infervisor.supervisor.Reload", parameters);
    if (!reply) return;
    std::optional<std::string> simulation;
    if (args.simulate) {
        simulation = simulation_report(ctx, "", "", kSimulateSince, {}, ctx.json);
        if (!simulation) return;
    }
    if (!ctx.json) {
        print_changes(reply->parameters, dry_run);
        if (simulation) std::cout << "\nWhat its rules would have done:\n" << *simulation;
        return;
    }
    json changes = json::object();
    for (const char* what : {"added", "removed", "changed", "warnings"})
        changes[what] = reply->parameters.value(what, json::array());
    changes["applied"] = !dry_run;
    if (simulation) changes["simulation"] = json::parse(*simulation);
    std::cout << dump_json(changes) << "\n";
}

}  // namespace

void add_reload_command(CLI::App& app, CliContext& ctx) {
    auto args = std::make_shared<ReloadArgs>();
    auto* reload = app.add_subcommand("reload", "Reread the configuration and apply it");
    reload->add_flag("--dry-run", args->dry_run,
                     "Say which workers applying it would add, remove or change; apply nothing");
    reload->add_flag("--simulate", args->simulate,
                     "With --dry-run: also replay the last hour's recording through its rules "
                     "(as simulate does)");
    reload->footer(
        "An invalid configuration changes nothing; its errors are printed and the exit\n"
        "code is 1 (with --dry-run too). A changed worker is restarted when it is\n"
        "applied. --json prints {added, removed, changed, warnings, applied} (and\n"
        "simulation, as simulate --json prints it, with --simulate).\n\n"
        "Examples:\n  infervisorctl reload --dry-run --simulate\n  infervisorctl reload");
    reload->callback([&ctx, args] { run_reload(ctx, *args); });
}

}  // namespace infervisor::cli
