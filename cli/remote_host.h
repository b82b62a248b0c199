// RemoteHost: a daemon on another host, reached as systemctl -H reaches
// systemd: `ssh HOST infervisor-stdio-bridge`, which connects to the
// daemon's control socket there and copies bytes between it and ssh's
// stdin/stdout (cli/stdio_bridge.cpp). Authorization is the remote
// daemon's, for the ssh user, as for a local call by that user.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace infervisor::cli {

// Where the bridge is installed on every host (meson: libexecdir/infervisor).
inline constexpr const char* kStdioBridge = INFERVISOR_LIBEXECDIR "/infervisor-stdio-bridge";

struct RemoteHost {
    std::string text;  // as given, for messages and the HOST column
    std::string user;  // empty: ssh's default
    std::string host;  // a name, an IPv4 address or a [bracketed] IPv6 one, brackets removed
    std::optional<int> port;
};

// [USER@]HOST[:PORT]. HOST and USER become ssh arguments: no leading '-',
// no whitespace or control characters, no shell or ssh metacharacters.
Result<RemoteHost> parse_remote_host(std::string_view text);

// The ssh command line (argv) that runs the bridge on `host`: `ssh` is
// $INFERVISOR_SSH or "ssh". Always -x (no X11) -T (no terminal),
// BatchMode when `batch` (several hosts at once: no password prompt may
// stall them), -p when given, "--" before [USER@]HOST.
std::vector<std::string> ssh_argv(const RemoteHost& host, const std::string& ssh, bool batch);

}  // namespace infervisor::cli
