// config check [FILE]
#include <cerrno>
#include <iostream>
#include <iterator>
#include <memory>

#include "base/file_io.h"
#include "commands.h"
#include "config/config_limits.h"
#include "config/config_loader.h"
#include "control/varlink_message.h"

namespace infervisor::cli {

namespace {

using nlohmann::json;

std::optional<std::string> read_text(CliContext& ctx, const std::string& file) {
    if (file == "-") return std::string(std::istreambuf_iterator<char>(std::cin), {});
    // As the daemon reads a configuration file: a regular file, not too
    // large, and the reason when it cannot be read.
    auto text = read_regular_file(file, config_limits::kMaxFileBytes,
                                  "a configuration file (put workers into drop-in files)");
    if (!text) {
        ctx.fail(kFailure, "cannot read " + file + ": " + text.error().message());
        return std::nullopt;
    }
    return std::move(*text);
}

// The verdict of this client's own copy of the parser, in the shape of the
// daemon's Validate reply.
json check_locally(const std::string& text, const std::string& name) {
    auto loaded = load_config_text(text, name);
    json errors = json::array();
    for (const auto& e : loaded.errors.all()) errors.push_back(e.format());
    return {{"valid", errors.empty()}, {"errors", errors}};
}

// The text goes to the daemon, which parses it with its own parser: the
// client reads the file with the caller's rights, never the daemon's. When no
// daemon listens, the client's own parser (the same code, this version)
// checks it, and says so on stderr.
void run_check(CliContext& ctx, const std::string& file) {
    auto text = read_text(ctx, file);
    if (!text) return;
    std::string name = file == "-" ? "<stdin>" : file;
    json parameters = {{"config", *text}, {"file", name}};
    VarlinkCall call{"io.infervisor.supervisor.Validate", parameters};
    json verdict;
    if (auto client = VarlinkClient::connect(ctx.socket)) {
        // The daemon closes a connection that sends more; say so instead.
        if (std::size_t size = encode_call(call).size(); size > kMaxCallBytes + 1) {
            ctx.fail(kFailure, name + " is too large to check over the control socket (" +
                                   std::to_string(text->size()) +
                                   " bytes; a call may have at most " +
                                   std::to_string(kMaxCallBytes) +
                                   "); check it with infervisord --check-config instead");
            return;
        }
        auto reply = ctx.call(*client, call.method, parameters);
        if (!reply) return;
        verdict = reply->parameters;
    } else if (client.error().code == ENOENT || client.error().code == ECONNREFUSED) {
        std::cerr << "infervisorctl: infervisord is not running; checked by infervisorctl "
                  << INFERVISOR_VERSION << " itself\n";
        verdict = check_locally(*text, name);
    } else {
        return ctx.fail_transport(client.error());
    }
    bool valid = verdict.value("valid", false);
    if (ctx.json) {
        std::cout << dump_json(verdict, 2) << "\n";
    } else if (valid) {
        std::cout << name << ": OK\n";
    } else {
        for (const auto& e : verdict.value("errors", json::array()))
            if (e.is_string()) std::cout << e.get<std::string>() << "\n";
    }
    if (!valid) ctx.exit_code = kFailure;
}

}  // namespace

void add_config_command(CLI::App& app, CliContext& ctx) {
    auto* config = app.add_subcommand("config", "Work with configuration files");
    config->require_subcommand(1);
    auto file = std::make_shared<std::string>("/etc/infervisor/infervisor.yaml");
    auto* check = config->add_subcommand("check", "Check a configuration file for errors");
    check->add_option("FILE", *file, "The file ('-' for standard input)")->capture_default_str();
    check->add_flag("--json", ctx.json, "Print the daemon's verdict as JSON");
    check->footer(
        "The running daemon checks the text with its own parser, in a helper process\n"
        "with your rights (credential files you cannot see are not reported);\n"
        "nothing is applied.\n"
        "When the daemon is not running, infervisorctl checks it itself.\n"
        "Errors are printed as FILE:LINE:COLUMN: MESSAGE and the exit code is 1.\n\n"
        "Examples:\n  infervisorctl config check\n"
        "  infervisorctl config check /etc/infervisor/infervisor.yaml.new\n"
        "  infervisorctl config check - < candidate.yaml");
    check->callback([&ctx, file] { run_check(ctx, *file); });
}

}  // namespace infervisor::cli
