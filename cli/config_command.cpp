// config check [FILE] [--workers-dir DIR]
#include <cerrno>
#include <iostream>
#include <iterator>
#include <memory>
#include <system_error>

#include "base/file_io.h"
#include "commands.h"
#include "config/config_limits.h"
#include "config/config_loader.h"
#include "control/varlink_message.h"

namespace infervisor::cli {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kDefaultFile = "/etc/infervisor/infervisor.yaml";

struct CheckRequest {
    std::string file;         // "-": standard input
    std::string workers_dir;  // empty: workers.d next to `file` (none for "-")
};

// What is checked: the main file and its drop-ins, read here with the
// caller's rights, and the errors met reading them.
struct ReadConfig {
    ConfigTexts texts;
    fs::path workers_dir;  // empty: no drop-ins are read
    ConfigErrors read_errors;
};

std::optional<std::string> read_main_text(CliContext& ctx, const std::string& file) {
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

// The drop-ins are those the daemon would read with this main file
// (ConfigSource::effective_workers_dir), unless --workers-dir names others.
std::optional<ReadConfig> read_config(CliContext& ctx, const CheckRequest& request) {
    auto main = read_main_text(ctx, request.file);
    if (!main) return std::nullopt;
    ReadConfig read;
    read.texts.main = {request.file == "-" ? "<stdin>" : request.file, std::move(*main)};
    std::error_code ec;
    if (!request.workers_dir.empty()) {
        read.workers_dir = request.workers_dir;
        if (!fs::is_directory(read.workers_dir, ec)) {
            ctx.fail(kFailure, "--workers-dir " + request.workers_dir + ": " +
                                   (ec ? ec.message() : std::string("not a directory")));
            return std::nullopt;
        }
    } else if (request.file != "-") {
        // As the daemon: no workers directory, no drop-ins.
        read.workers_dir = ConfigSource{request.file, {}}.effective_workers_dir();
        if (!fs::exists(read.workers_dir, ec)) read.workers_dir.clear();
    }
    std::size_t total = read.texts.main.text.size();
    if (!read.workers_dir.empty())
        read.texts.dropins = read_dropin_texts(read.workers_dir, read.read_errors, total);
    return read;
}

// The errors of reading first, then those of the check.
json merged_verdict(const ConfigErrors& read_errors, const json& checked) {
    json errors = json::array();
    for (const auto& line : read_errors.lines()) errors.push_back(line);
    for (const auto& e : checked.value("errors", json::array()))
        if (e.is_string()) errors.push_back(e);
    json warnings = json::array();
    for (const auto& w : checked.value("warnings", json::array()))
        if (w.is_string()) warnings.push_back(w);
    bool valid = checked.value("valid", false) && read_errors.empty();
    return {{"valid", valid}, {"errors", std::move(errors)}, {"warnings", std::move(warnings)}};
}

json verdict_of(const LoadedConfig& loaded) {
    return {{"valid", loaded.errors.empty()},
            {"errors", loaded.errors.lines()},
            {"warnings", loaded.errors.warning_lines()}};
}

VarlinkCall validate_call(const ConfigTexts& texts) {
    json dropins = json::array();
    for (const auto& d : texts.dropins) dropins.push_back({{"file", d.file}, {"config", d.text}});
    json parameters = {{"config", texts.main.text}, {"file", texts.main.file}};
    if (!dropins.empty()) parameters["dropins"] = std::move(dropins);
    return {"io.infervisor.supervisor.Validate", std::move(parameters)};
}

std::size_t text_bytes(const ConfigTexts& texts) {
    std::size_t bytes = texts.main.text.size();
    for (const auto& d : texts.dropins) bytes += d.text.size();
    return bytes;
}

// The texts go to the daemon, which checks them with its own parser: the
// client reads the files with the caller's rights, never the daemon's. When
// no daemon listens, the client's own parser (the same code, this version)
// checks them, and says so on stderr.
std::optional<json> check(CliContext& ctx, const ReadConfig& read) {
    auto call = validate_call(read.texts);
    auto client = VarlinkClient::connect(ctx.socket);
    if (client) {
        // The daemon closes a connection that sends more; say so instead.
        if (encode_call(call).size() > kMaxCallBytes + 1) {
            ctx.fail(kFailure, read.texts.main.file + " and its " +
                                   std::to_string(read.texts.dropins.size()) +
                                   " drop-in(s) are too large to check over the control socket (" +
                                   std::to_string(text_bytes(read.texts)) +
                                   " bytes; a call may have at most " +
                                   std::to_string(kMaxCallBytes) +
                                   "); check them with infervisord --check-config instead");
            return std::nullopt;
        }
        auto reply = ctx.call(*client, call.method, call.parameters);
        if (!reply) return std::nullopt;
        return merged_verdict(read.read_errors, reply->parameters);
    }
    if (client.error().code != ENOENT && client.error().code != ECONNREFUSED) {
        ctx.fail_transport(client.error());
        return std::nullopt;
    }
    std::cerr << "infervisorctl: infervisord is not running; checked by infervisorctl "
              << INFERVISOR_VERSION << " itself\n";
    return verdict_of(load_config_texts(read.texts, {}, read.read_errors));
}

std::string what_was_checked(const ReadConfig& read) {
    std::string what = read.texts.main.file;
    if (read.workers_dir.empty()) return what;
    return what + " with " + std::to_string(read.texts.dropins.size()) + " drop-in(s) from " +
           read.workers_dir.string();
}

void run_check(CliContext& ctx, const CheckRequest& request) {
    auto read = read_config(ctx, request);
    if (!read) return;
    auto verdict = check(ctx, *read);
    if (!verdict) return;
    bool valid = verdict->value("valid", false);
    if (ctx.json) {
        std::cout << dump_json(*verdict, 2) << "\n";
    } else if (valid) {
        std::cout << what_was_checked(*read) << ": OK\n";
    } else {
        for (const auto& e : verdict->value("errors", json::array()))
            if (e.is_string()) std::cout << e.get<std::string>() << "\n";
    }
    if (!ctx.json)
        for (const auto& w : verdict->value("warnings", json::array()))
            if (w.is_string()) std::cerr << "warning: " << w.get<std::string>() << "\n";
    if (!valid) ctx.exit_code = kFailure;
}

}  // namespace

void add_config_command(CLI::App& app, CliContext& ctx) {
    auto* config = app.add_subcommand("config", "Work with configuration files");
    config->require_subcommand(1);
    auto request = std::make_shared<CheckRequest>(CheckRequest{kDefaultFile, {}});
    auto* check =
        config->add_subcommand("check", "Check a configuration file and its drop-ins for errors");
    check->add_option("FILE", request->file, "The main file ('-' for standard input)")
        ->capture_default_str();
    check->add_option("--workers-dir", request->workers_dir,
                      "The drop-ins to check with it: DIR/*.yaml [default: workers.d next to "
                      "FILE; none for '-']");
    check->add_flag("--json", ctx.json, "Print the verdict as JSON");
    check->footer(
        "The files are read with your rights and checked together, as infervisord\n"
        "reads them: the main file, then its drop-ins in name order. The running\n"
        "daemon checks them with its own parser, in a helper process with your\n"
        "rights (credential files you cannot see are not reported); nothing is\n"
        "applied. When the daemon is not running, infervisorctl checks them itself.\n"
        "Errors are printed as FILE:LINE:COLUMN: MESSAGE and the exit code is 1.\n"
        "What is valid but likely to fail (a command that does not exist) is a\n"
        "warning on stderr: warning: FILE:LINE:COLUMN: MESSAGE; --json has both\n"
        "lists, {valid, errors, warnings}.\n\n"
        "Examples:\n  infervisorctl config check\n"
        "  infervisorctl config check --workers-dir /etc/infervisor/workers.d.new \\\n"
        "      /etc/infervisor/infervisor.yaml.new\n"
        "  infervisorctl config check - < candidate.yaml");
    check->callback([&ctx, request] {
        if (ctx.refuses_hosts("config check", "configuration files on this machine")) return;
        run_check(ctx, *request);
    });
}

}  // namespace infervisor::cli
