// CliContext: what every infervisorctl command shares — where the daemon
// is, how to print — and the mapping of failures to messages and exit codes.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "control/varlink_client.h"
#include "exit_codes.h"
#include "pager.h"
#include "ssh_tunnel.h"

namespace infervisor::cli {

struct CliContext {
    std::filesystem::path socket = "/run/infervisor/io.infervisor";
    // -H [USER@]HOST[:PORT]: the daemon on another host, over ssh
    // (remote_host.h). Several: `status` reads each (hosts_status.h); any
    // other command refuses.
    std::vector<std::string> hosts;
    // ssh without prompts (BatchMode): set for each host of a multi-host
    // status, which no password prompt may stall.
    bool batch_ssh = false;
    bool json = false;      // --json (global, or after a reading command)
    bool colour = false;    // decided once: stdout is a terminal and NO_COLOR is unset
    bool use_pager = true;  // --no-pager clears it
    bool legend = true;     // --no-legend clears it: tables without their header line
    int exit_code = kSuccess;
    // A command's --timeout (use_timeout): each call's answer is awaited
    // this long (with -H, ssh's connection included); past it the command
    // says "no answer within <answer_timeout_text>" and ends ssh. None: no
    // limit.
    std::optional<Duration> answer_timeout;
    std::string answer_timeout_text;

    // Long output (status, show, events, logs) goes through the pager from
    // here on when stdout is a terminal (see pager.h). Call before printing.
    void page();

    // A --timeout option's text ("" for none): sets answer_timeout, or fails
    // the command as a usage error ("expected a duration such as 30s") and
    // returns false.
    bool use_timeout(const std::string& text);

    // Connects (to the local socket, or with one -H through ssh), or prints
    // why not and sets exit_code (4 not running or unreachable, 5 denied,
    // 2 several -H, 1 other).
    std::optional<VarlinkClient> connect();
    // Calls `method`; on a transport failure or an error reply, prints it,
    // sets exit_code and returns nullopt.
    std::optional<VarlinkReply> call(VarlinkClient& client, const std::string& method,
                                     const nlohmann::json& parameters = nlohmann::json::object());

    // For a command that reads this machine (its journal, its files): with
    // -H, fails it as a usage error saying so (it would answer for the
    // wrong host) and returns true.
    bool refuses_hosts(const std::string& command, const std::string& reads);

    // For a command without JSON output: with --json, fails it as a usage
    // error (rather than ignore the flag) and returns true.
    bool refuses_json(const std::string& command, const std::string& instead);

    // Prints "infervisorctl: <what>" to stderr and records the exit code.
    void fail(int code, const std::string& what);
    void fail_transport(const Error& error);
    void fail_reply(const VarlinkReply& reply);

  private:
    Pager pager_;
    std::optional<SshTunnel> tunnel_;  // with -H
};

// Colour is for terminals, and never when NO_COLOR is set (no-color.org).
bool colour_wanted(int fd);

}  // namespace infervisor::cli
