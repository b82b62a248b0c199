#include "remote_host.h"

#include <charconv>

namespace infervisor::cli {

namespace {

// Letters, digits and . _ - (and ':' inside brackets, for IPv6): what a
// host name, an address or a user name needs, and nothing ssh or a shell
// would read otherwise.
bool plain_word(std::string_view word, bool allow_colon) {
    if (word.empty() || word.front() == '-' || word.size() > 253) return false;
    for (char c : word) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '-' || (allow_colon && c == ':');
        if (!ok) return false;
    }
    return true;
}

}  // namespace

Result<RemoteHost> parse_remote_host(std::string_view text) {
    RemoteHost out;
    out.text = std::string(text);
    auto bad = [&](const std::string& why) {
        return plain_error("-H '" + std::string(text) + "': " + why +
                           " (expected [USER@]HOST[:PORT])");
    };
    std::string_view rest = text;
    if (auto at = rest.find('@'); at != std::string_view::npos) {
        out.user = std::string(rest.substr(0, at));
        rest.remove_prefix(at + 1);
        if (!plain_word(out.user, false)) return bad("not a user name");
    }
    std::string_view port_text;
    if (!rest.empty() && rest.front() == '[') {
        auto close = rest.find(']');
        if (close == std::string_view::npos) return bad("an unclosed '['");
        out.host = std::string(rest.substr(1, close - 1));
        rest.remove_prefix(close + 1);
        if (!plain_word(out.host, true)) return bad("not an IPv6 address");
        if (!rest.empty()) {
            if (rest.front() != ':') return bad("text after ']'");
            port_text = rest.substr(1);
        }
    } else {
        auto colon = rest.find(':');
        out.host = std::string(rest.substr(0, colon));
        if (colon != std::string_view::npos) port_text = rest.substr(colon + 1);
        if (!plain_word(out.host, false)) return bad("not a host name or address");
    }
    if (!port_text.empty() || text.ends_with(":")) {
        int port = 0;
        auto [end, ec] =
            std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
        if (ec != std::errc() || end != port_text.data() + port_text.size() || port < 1 ||
            port > 65535)
            return bad("not a port (1-65535)");
        out.port = port;
    }
    return out;
}

std::vector<std::string> ssh_argv(const RemoteHost& host, const std::string& ssh, bool batch) {
    // As systemd runs ssh for systemctl -H (bus_set_address_system_remote;
    // its test-bus-address.c: "ssh -xT -p 123 -- user@host
    // systemd-stdio-bridge"), with BatchMode when several hosts go at once.
    // A host that goes away mid-command ends the command rather than hang
    // it: ssh gives up on a connection (and the banner exchange) after 10 s,
    // and on a host that stops answering its keepalives after 3 x 5 s.
    std::vector<std::string> argv = {ssh, "-xT"};
    if (batch) argv.insert(argv.end(), {"-o", "BatchMode=yes"});
    argv.insert(argv.end(), {"-o", "ConnectTimeout=10", "-o", "ServerAliveInterval=5", "-o",
                             "ServerAliveCountMax=3"});
    if (host.port) argv.insert(argv.end(), {"-p", std::to_string(*host.port)});
    argv.insert(argv.end(),
                {"--", host.user.empty() ? host.host : host.user + "@" + host.host, kStdioBridge});
    return argv;
}

}  // namespace infervisor::cli
