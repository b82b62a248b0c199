// reload [--dry-run]: the daemon rereads its configuration files and applies
// them, or (--dry-run) says what applying them would change.
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

void run_reload(CliContext& ctx, bool dry_run) {
    auto client = ctx.connect();
    if (!client) return;
    json parameters = json::object();
    if (dry_run) parameters["dry_run"] = true;
    auto reply = ctx.call(*client, "io.infervisor.supervisor.Reload", parameters);
    if (!reply) return;
    if (!ctx.json) return print_changes(reply->parameters, dry_run);
    json changes = json::object();
    for (const char* what : {"added", "removed", "changed", "warnings"})
        changes[what] = reply->parameters.value(what, json::array());
    changes["applied"] = !dry_run;
    std::cout << dump_json(changes) << "\n";
}

}  // namespace

void add_reload_command(CLI::App& app, CliContext& ctx) {
    auto dry_run = std::make_shared<bool>(false);
    auto* reload = app.add_subcommand("reload", "Reread the configuration and apply it");
    reload->add_flag("--dry-run", *dry_run,
                     "Say which workers applying it would add, remove or change; apply nothing");
    reload->footer(
        "An invalid configuration changes nothing; its errors are printed and the exit\n"
        "code is 1 (with --dry-run too). A changed worker is restarted when it is\n"
        "applied. --json prints {added, removed, changed, warnings, applied}.\n\n"
        "Examples:\n  infervisorctl reload --dry-run\n  infervisorctl reload");
    reload->callback([&ctx, dry_run] { run_reload(ctx, *dry_run); });
}

}  // namespace infervisor::cli
