// checkpoints NAME [--json] | --delete ID | --all [--yes]: lists a worker's
// published checkpoints (id, when written, size, method, which one its next
// start restores), or deletes them. Checkpoints hold what the worker wrote
// (prompts, KV caches): an operator must be able to see and remove them.
// Deleting asks first on a terminal; elsewhere it needs --yes, as
// remove-workdir does.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <memory>

#include "commands.h"
#include "confirm.h"
#include "control/varlink_message.h"
#include "human_format.h"

namespace infervisor::cli {

namespace {

using nlohmann::json;

constexpr const char* kListMethod = "io.infervisor.supervisor.ListCheckpoints";
constexpr const char* kDeleteMethod = "io.infervisor.supervisor.DeleteCheckpoints";
constexpr size_t kIdDigits = 10;

struct CheckpointsArgs {
    std::string name;
    bool delete_one = false;  // --delete was given (maybe with an empty id)
    std::string delete_id;
    bool all = false;
    bool yes = false;
};

// "7" or "0000000007" → "0000000007"; nullopt when it is not a number of at
// most ten digits (the daemon checks again, and looks it up).
std::optional<std::string> checkpoint_id(const std::string& text) {
    if (text.empty() || text.size() > kIdDigits ||
        !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return std::nullopt;
    return std::string(kIdDigits - text.size(), '0') + text;
}

std::optional<uint64_t> optional_number(const json& entry, const char* key) {
    auto it = entry.find(key);
    if (it == entry.end() || !it->is_number_integer()) return std::nullopt;
    return it->get<uint64_t>();
}

void print_row(const std::string& id, const std::string& written, const std::string& size,
               const std::string& method, const std::string& restore) {
    std::string row =
        fmt::format("{:<10}  {:<19}  {:>6}  {:<12}  {}", id, written, size, method, restore);
    row.erase(row.find_last_not_of(' ') + 1);
    std::cout << row << "\n";
}

// One line per checkpoint, oldest first, under a header (unless --no-legend).
void print_checkpoints(const json& reply, const std::string& name, bool legend) {
    const json checkpoints = reply.value("checkpoints", json::array());
    if (checkpoints.empty()) {
        std::cout << "worker '" << name << "' has no checkpoints\n";
        return;
    }
    if (legend) print_row("ID", "WRITTEN", "SIZE", "METHOD", "RESTORE");
    for (const auto& c : checkpoints) {
        auto written = optional_number(c, "written_usec");
        print_row(printable(c.value("id", "")), written ? local_time(*written) : "-",
                  human_bytes(optional_number(c, "bytes")), printable(c.value("method", "")),
                  c.value("next_restore", false) ? "next" : "");
    }
    if (legend)
        std::cout << "in " << printable(reply.value("directory", "")) << "; RESTORE: what the next "
                  << "start restores (deleting it makes that start fresh)\n";
}

// The ids the deletion means, from the daemon's list: the one asked for (it
// must be there), or all. Prints why not and returns nullopt.
std::optional<std::vector<std::string>> chosen_ids(CliContext& ctx, const CheckpointsArgs& args,
                                                   const json& listing) {
    std::vector<std::string> ids;
    for (const auto& c : listing.value("checkpoints", json::array())) {
        std::string id = c.value("id", "");
        if (args.all || id == args.delete_id) ids.push_back(id);
    }
    if (!args.all && ids.empty()) {
        ctx.fail(kFailure, "worker '" + args.name + "' has no checkpoint " + args.delete_id +
                               " (infervisorctl checkpoints " + args.name + " lists them)");
        return std::nullopt;
    }
    return ids;
}

// Whether to go on: asked on a terminal; elsewhere only with --yes.
bool confirmed(CliContext& ctx, const CheckpointsArgs& args, const std::vector<std::string>& ids) {
    if (args.yes) return true;
    std::string what = ids.size() == 1 ? "checkpoint " + ids.front()
                                       : "all " + std::to_string(ids.size()) + " checkpoints";
    auto answer = ask_yes_no("Delete " + what + " of worker '" + args.name + "'?");
    if (!answer) {
        ctx.fail(kUsage, "checkpoints would delete " + what + " of worker '" + args.name +
                             "'; stdin is not a terminal to ask on: pass --yes to delete");
        return false;
    }
    if (!*answer) {
        std::cerr << "nothing deleted\n";
        ctx.exit_code = kFailure;
    }
    return *answer;
}

void run_delete(CliContext& ctx, VarlinkClient& client, const CheckpointsArgs& args) {
    auto listing = ctx.call(client, kListMethod, {{"name", args.name}});
    if (!listing) return;
    auto ids = chosen_ids(ctx, args, listing->parameters);
    if (!ids) return;
    if (ids->empty()) {
        std::cout << "worker '" << args.name << "' has no checkpoints; nothing to delete\n";
        return;
    }
    if (!confirmed(ctx, args, *ids)) return;
    // --all deletes what the daemon has when it deletes (one more may have
    // been written since the list); an id, exactly that one.
    json params = {{"name", args.name}};
    if (args.all)
        params["all"] = true;
    else
        params["ids"] = json::array({args.delete_id});
    auto reply = ctx.call(client, kDeleteMethod, params);
    if (!reply) return;
    auto deleted = reply->parameters.value("deleted", json::array());
    for (const auto& id : deleted)
        if (id.is_string())
            std::cout << "deleted checkpoint " << printable(id.get<std::string>()) << " of "
                      << args.name << "\n";
    if (deleted.empty()) std::cout << "nothing deleted: worker '" << args.name << "' had none\n";
}

void run_checkpoints(CliContext& ctx, CheckpointsArgs args) {
    bool deleting = args.all || args.delete_one;
    if (deleting && ctx.refuses_json("checkpoints --delete",
                                     "its exit code says how it went, and its output which ones"))
        return;
    if (args.delete_one) {
        auto id = checkpoint_id(args.delete_id);
        if (!id)
            return ctx.fail(kUsage, "--delete: '" + printable(args.delete_id) +
                                        "' is not a checkpoint id (a number, as listed)");
        args.delete_id = *id;
    }
    auto client = ctx.connect();
    if (!client) return;
    if (deleting) return run_delete(ctx, *client, args);
    auto reply = ctx.call(*client, kListMethod, {{"name", args.name}});
    if (!reply) return;
    if (ctx.json) {
        std::cout << dump_json(reply->parameters, 2) << "\n";
        return;
    }
    print_checkpoints(reply->parameters, args.name, ctx.legend);
}

}  // namespace

void add_checkpoints_command(CLI::App& app, CliContext& ctx) {
    auto args = std::make_shared<CheckpointsArgs>();
    auto* cmd = app.add_subcommand("checkpoints", "List or delete a worker's checkpoints");
    cmd->add_option("NAME", args->name, "The worker")->required();
    cmd->add_flag("--json", ctx.json, "Print the daemon's reply as JSON (listing only)");
    auto* del = cmd->add_option("--delete", args->delete_id, "Delete the checkpoint with this ID");
    auto* all = cmd->add_flag("--all", args->all, "Delete all of the worker's checkpoints");
    del->excludes(all);
    cmd->add_flag("-y,--yes", args->yes, "Delete without asking");
    cmd->footer(
        "Lists the worker's published checkpoints, oldest first: ID, when the daemon\n"
        "wrote it, its size, its method (cooperative: the files the worker wrote;\n"
        "criu: an image of its processes; llama_server: llama-server's slots), and\n"
        "RESTORE 'next' on the one its next start restores. Anyone who may read\n"
        "status may list; nothing inside a\n"
        "checkpoint is shown (only root and the worker read them: they hold prompts\n"
        "and KV caches, unencrypted).\n"
        "--delete ID (as listed; 7 means 0000000007) or --all deletes them; that needs\n"
        "root or the daemon's control group and is journaled (checkpoint-deleted,\n"
        "with your uid). Deleting the one the next start restores makes that start\n"
        "fresh (or restore the newest one left). Refused while the worker is writing\n"
        "a checkpoint, and for the one a starting worker is restoring from.\n"
        "On a terminal it asks first; elsewhere it needs --yes and exits 2 without it.\n\n"
        "Examples:\n  infervisorctl checkpoints llama\n"
        "  infervisorctl checkpoints llama --json\n"
        "  infervisorctl checkpoints llama --delete 7\n"
        "  infervisorctl checkpoints llama --all --yes");
    cmd->callback([&ctx, args, del] {
        args->delete_one = del->count() > 0;
        run_checkpoints(ctx, *args);
    });
}

}  // namespace infervisor::cli
