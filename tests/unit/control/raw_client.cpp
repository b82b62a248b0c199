#include "raw_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstring>

namespace infervisor::testing {

RawClient::RawClient(const std::filesystem::path& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0)
        fd_ = std::move(fd);
}

bool RawClient::send(std::string_view bytes) {
    while (!bytes.empty()) {
        ssize_t n = ::send(fd_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n < 0) return false;
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

bool RawClient::wait_readable() {
    pollfd pfd{fd_.get(), POLLIN, 0};
    return ::poll(&pfd, 1, 20000) == 1;
}

std::optional<std::string> RawClient::read_message() {
    char chunk[4096];
    for (;;) {
        if (auto end = buffer_.find('\0'); end != std::string::npos) {
            std::string message = buffer_.substr(0, end);
            buffer_.erase(0, end + 1);
            return message;
        }
        if (!wait_readable()) return std::nullopt;
        ssize_t n = ::recv(fd_.get(), chunk, sizeof chunk, 0);
        if (n <= 0) return std::nullopt;
        buffer_.append(chunk, static_cast<std::size_t>(n));
    }
}

bool RawClient::closed_by_peer() {
    char chunk[65536];
    for (;;) {
        if (!wait_readable()) return false;
        ssize_t n = ::recv(fd_.get(), chunk, sizeof chunk, 0);
        if (n == 0 || (n < 0 && errno == ECONNRESET)) return true;
        if (n < 0) return false;
    }
}

void RawClient::shutdown_write() { ::shutdown(fd_.get(), SHUT_WR); }

}  // namespace infervisor::testing
