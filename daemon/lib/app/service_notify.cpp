#include "app/service_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/unique_fd.h"

namespace infervisor {

namespace {

template <typename Number>
std::optional<Number> environment_number(const char* name) {
    const char* text = std::getenv(name);
    if (!text || !*text) return std::nullopt;
    Number value{};
    const char* end = text + std::strlen(text);
    auto [at, ec] = std::from_chars(text, end, value);
    if (ec != std::errc() || at != end) return std::nullopt;
    return value;
}

// One socket for every message, made at the first: a socket per message
// cost a twentieth of the idle daemon's CPU in the guest (issue 28; the
// watchdog alone sends one every WatchdogSec/6). Unbound, so it is good for
// any address; close-on-exec, so a re-executed daemon makes its own.
Result<int> notify_socket() {
    static UniqueFd sock;
    if (!sock) sock.reset(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!sock) return errno_error("socket(AF_UNIX, SOCK_DGRAM)");
    return sock.get();
}

}  // namespace

Result<bool> notify_service_manager(std::string_view state) {
    const char* target = std::getenv("NOTIFY_SOCKET");
    if (!target || !*target) return false;
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::size_t n = std::strlen(target);
    if ((target[0] != '/' && target[0] != '@') || n >= sizeof address.sun_path)
        return plain_error(std::string("NOTIFY_SOCKET is not a socket path: ") + target);
    std::memcpy(address.sun_path, target, n);
    if (target[0] == '@') address.sun_path[0] = '\0';  // an abstract name: no terminating NUL
    auto length =
        static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + n + (target[0] == '@' ? 0 : 1));
    auto sock = notify_socket();
    if (!sock) return sock.error();
    if (::sendto(*sock, state.data(), state.size(), MSG_NOSIGNAL,
                 reinterpret_cast<const sockaddr*>(&address), length) < 0)
        return errno_error(std::string("notify the service manager at ") + target);
    return true;
}

std::optional<std::chrono::microseconds> service_watchdog_interval() {
    auto usec = environment_number<std::uint64_t>("WATCHDOG_USEC");
    if (!usec || *usec == 0) return std::nullopt;
    if (std::getenv("WATCHDOG_PID")) {
        auto pid = environment_number<pid_t>("WATCHDOG_PID");
        if (!pid || *pid != ::getpid()) return std::nullopt;
    }
    return std::chrono::microseconds(*usec);
}

}  // namespace infervisor
