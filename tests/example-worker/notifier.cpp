#include "notifier.h"

#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>

namespace example_worker {

Notifier::Notifier(const char* socket_name) {
    if (!socket_name || !*socket_name) return;
    size_t length = std::strlen(socket_name);
    if ((socket_name[0] != '/' && socket_name[0] != '@') || length >= sizeof address_.sun_path) {
        std::fprintf(stderr, "warning: ignoring unusable NOTIFY_SOCKET '%s'\n", socket_name);
        return;
    }
    address_.sun_family = AF_UNIX;
    std::memcpy(address_.sun_path, socket_name, length);
    // Abstract names start with NUL and are not NUL-terminated; paths are.
    if (socket_name[0] == '@') address_.sun_path[0] = '\0';
    address_length_ = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + length +
                                             (socket_name[0] == '@' ? 0 : 1));
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) std::fprintf(stderr, "warning: notify socket: %s\n", std::strerror(errno));
}

Notifier::~Notifier() {
    if (fd_ >= 0) ::close(fd_);
}

void Notifier::send(std::string_view message) {
    if (fd_ < 0) return;
    ssize_t sent = ::sendto(fd_, message.data(), message.size(), MSG_NOSIGNAL,
                            reinterpret_cast<const sockaddr*>(&address_), address_length_);
    if (sent < 0 && !warned_) {
        warned_ = true;
        std::fprintf(stderr, "warning: sending to NOTIFY_SOCKET failed: %s\n",
                     std::strerror(errno));
    }
}

}  // namespace example_worker
