#include "cli_context.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <iostream>

#include "base/units.h"
#include "control/varlink_errors.h"
#include "remote_host.h"

namespace infervisor::cli {

namespace err = varlink_error;

bool CliContext::use_timeout(const std::string& text) {
    if (text.empty()) return true;
    auto parsed = parse_duration(text);
    if (!parsed || *parsed <= Duration::zero()) {
        fail(kUsage, "--timeout: expected a duration such as 30s or 5m, not '" + text + "'");
        return false;
    }
    answer_timeout = *parsed;
    answer_timeout_text = text;
    return true;
}

std::optional<VarlinkClient> CliContext::connect() {
    if (hosts.size() > 1) {
        fail(kUsage,
             "several -H: only 'status' reads many hosts at once; every other command takes one "
             "-H, so that a change is never made on many hosts by accident");
        return std::nullopt;
    }
    if (hosts.size() == 1) {
        auto host = parse_remote_host(hosts.front());
        if (!host) {
            fail(kUsage, host.error().message());
            return std::nullopt;
        }
        const char* ssh = std::getenv("INFERVISOR_SSH");
        auto tunnel = SshTunnel::open(ssh_argv(*host, ssh && *ssh ? ssh : "ssh", batch_ssh));
        if (!tunnel) {
            fail(kNotRunning, host->text + ": " + tunnel.error().message());
            return std::nullopt;
        }
        tunnel_.emplace(std::move(*tunnel));
        auto client = VarlinkClient::over(tunnel_->take_client_end());
        client.set_timeout(answer_timeout);
        return client;
    }
    auto client = VarlinkClient::connect(socket);
    if (client) {
        client->set_timeout(answer_timeout);
        return std::move(*client);
    }
    fail_transport(client.error());
    return std::nullopt;
}

std::optional<VarlinkReply> CliContext::call(VarlinkClient& client, const std::string& method,
                                             const nlohmann::json& parameters) {
    auto reply = client.call(method, parameters);
    if (!reply) {
        fail_transport(reply.error());
        return std::nullopt;
    }
    if (reply->failed()) {
        fail_reply(*reply);
        return std::nullopt;
    }
    return std::move(*reply);
}

bool CliContext::refuses_hosts(const std::string& command, const std::string& reads) {
    if (hosts.empty()) return false;
    fail(kUsage, "'" + command + "' reads " + reads +
                     ", so it takes no -H (on another host: ssh HOST infervisorctl " + command +
                     " ...)");
    return true;
}

bool CliContext::refuses_json(const std::string& command, const std::string& instead) {
    if (!json) return false;
    fail(kUsage, "--json: '" + command + "' has no JSON output; " + instead);
    return true;
}

void CliContext::fail(int code, const std::string& what) {
    std::cerr << "infervisorctl: " << what << "\n";
    exit_code = code;
}

void CliContext::fail_transport(const Error& error) {
    if (error.code == ETIMEDOUT && answer_timeout) {
        if (!tunnel_) return fail(kFailure, "no answer within " + answer_timeout_text);
        tunnel_->terminate();
        return fail(kNotRunning, hosts.front() + ": no answer within " + answer_timeout_text);
    }
    if (tunnel_) {
        // The connection ended: ssh's exit status says why (the bridge's own
        // codes, or 255 for ssh's failure), and both have said so on stderr.
        int status = tunnel_->wait();
        const std::string& host = hosts.front();
        if (status == kNotRunning) return fail(kNotRunning, host + ": infervisord is not running");
        if (status == kPermissionDenied)
            return fail(kPermissionDenied, host + ": no permission to open the control socket");
        if (status == 255) return fail(kNotRunning, host + ": ssh failed (see above)");
        if (status == 127)
            return fail(kNotRunning, host +
                                         ": no infervisor-stdio-bridge there (is infervisor "
                                         "installed on it?)");
        return fail(kFailure,
                    host + ": " + error.message() + " (ssh exited " + std::to_string(status) + ")");
    }
    switch (error.code) {
        case ENOENT:
        case ECONNREFUSED:
            return fail(kNotRunning,
                        "infervisord is not running (nothing listens on " + socket.string() + ")");
        case EACCES:
        case EPERM:
            return fail(kPermissionDenied, "no permission to open " + socket.string());
        default:
            return fail(kFailure, error.message());
    }
}

void CliContext::fail_reply(const VarlinkReply& reply) {
    const auto& p = reply.parameters;
    if (reply.error == err::kWorkerNotFound)
        return fail(kUnknownWorker, "no worker named '" + p.value("name", "") + "'");
    if (reply.error == err::kPermissionDenied)
        return fail(kPermissionDenied,
                    "permission denied: changing workers needs root or the daemon's control group");
    if (reply.error == err::kActionFailed)
        return fail(kFailure, p.value("name", "") + ": " + p.value("reason", "failed"));
    if (reply.error == err::kConfigInvalid) {
        for (const auto& e : p.value("errors", nlohmann::json::array()))
            if (e.is_string()) std::cerr << e.get<std::string>() << "\n";
        return fail(kFailure, "the configuration is invalid; nothing was changed");
    }
    if (reply.error == err::kTooManyConnections)
        return fail(kFailure,
                    "the daemon refused the connection: " +
                        std::string(p.value("scope", "") == "uid" ? "this user already holds"
                                                                  : "it already serves") +
                        " its limit of " + std::to_string(p.value("limit", 0)) +
                        " control connections; try again later");
    if (reply.error == err::kValidationFailed)
        return fail(kFailure, "the daemon could not check the configuration: " +
                                  p.value("reason", std::string("no reason given")));
    if (reply.error == err::kReplyTooLarge)
        return fail(kFailure, "the daemon's reply was too large (" +
                                  std::to_string(p.value("size", 0)) + " bytes, limit " +
                                  std::to_string(p.value("limit", 0)) + ")");
    fail(kFailure, "the daemon answered " + reply.error + " " + dump_json(p));
}

void CliContext::page() {
    if (use_pager) pager_.start();
}

bool colour_wanted(int fd) {
    const char* no_colour = std::getenv("NO_COLOR");
    if (no_colour && *no_colour) return false;
    return ::isatty(fd) == 1;
}

}  // namespace infervisor::cli
