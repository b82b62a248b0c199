// CliContext: what every infervisorctl command shares — where the daemon
// is, how to print — and the mapping of failures to messages and exit codes.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>

#include "base/result.h"
#include "control/varlink_client.h"
#include "exit_codes.h"

namespace infervisor::cli {

struct CliContext {
    std::filesystem::path socket = "/run/infervisor/io.infervisor";
    bool json = false;    // set by --json of the reading commands
    bool colour = false;  // decided once: stdout is a terminal and NO_COLOR is unset
    int exit_code = kSuccess;

    // Connects, or prints why not and sets exit_code (4 not running, 5 denied, 1 other).
    std::optional<VarlinkClient> connect();
    // Calls `method`; on a transport failure or an error reply, prints it,
    // sets exit_code and returns nullopt.
    std::optional<VarlinkReply> call(VarlinkClient& client, const std::string& method,
                                     const nlohmann::json& parameters = nlohmann::json::object());

    // Prints "infervisorctl: <what>" to stderr and records the exit code.
    void fail(int code, const std::string& what);
    void fail_transport(const Error& error);
    void fail_reply(const VarlinkReply& reply);
};

// Colour is for terminals, and never when NO_COLOR is set (no-color.org).
bool colour_wanted(int fd);

}  // namespace infervisor::cli
