// infervisor-stdio-bridge: what `infervisorctl -H HOST` runs on HOST over
// ssh (as systemctl -H runs systemd-stdio-bridge): it connects to the
// daemon's control socket and copies bytes between it and its own stdin and
// stdout until either side is done. It adds nothing and checks nothing: the
// daemon authorizes the connection by the peer credentials of this process,
// the ssh user's, as for a local infervisorctl of that user.
//
//   infervisor-stdio-bridge [--socket PATH]   (default $INFERVISOR_SOCKET,
//                                              else /run/infervisor/io.infervisor)
//
// Exit status: 0 when a side closed; 4 when the daemon is not running (the
// socket is missing or refuses), 5 when the socket may not be opened, 1 on
// any other error; a message on stderr says which.
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

namespace {

int fail(int code, const std::string& what) {
    std::cerr << "infervisor-stdio-bridge: " << what << "\n";
    return code;
}

// Writes all of `n` bytes; false on an error.
bool write_all(int fd, const char* data, size_t n) {
    while (n > 0) {
        ssize_t w = ::write(fd, data, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        data += w;
        n -= static_cast<size_t>(w);
    }
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    std::string path = std::getenv("INFERVISOR_SOCKET") ? std::getenv("INFERVISOR_SOCKET")
                                                        : "/run/infervisor/io.infervisor";
    if (argc == 3 && std::string(argv[1]) == "--socket")
        path = argv[2];
    else if (argc != 1)
        return fail(2, "usage: infervisor-stdio-bridge [--socket PATH]");
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) return fail(1, "socket path too long: " + path);
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    int sock = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (sock < 0) return fail(1, std::string("socket: ") + std::strerror(errno));
    if (::connect(sock, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        int e = errno;
        if (e == ENOENT || e == ECONNREFUSED)
            return fail(4, "infervisord is not running (nothing listens on " + path + ")");
        if (e == EACCES || e == EPERM) return fail(5, "no permission to open " + path);
        return fail(1, "connect to " + path + ": " + std::strerror(e));
    }
    // stdin -> socket until stdin ends (then the socket's write side is shut
    // down, and the daemon's answers still come back); socket -> stdout
    // until the daemon closes.
    std::array<char, 65536> buffer;
    bool stdin_open = true;
    for (;;) {
        pollfd fds[2] = {{STDIN_FILENO, static_cast<short>(stdin_open ? POLLIN : 0), 0},
                         {sock, POLLIN, 0}};
        if (::poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            return fail(1, std::string("poll: ") + std::strerror(errno));
        }
        if (stdin_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
            ssize_t n = ::read(STDIN_FILENO, buffer.data(), buffer.size());
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                stdin_open = false;
                ::shutdown(sock, SHUT_WR);
            } else if (!write_all(sock, buffer.data(), static_cast<size_t>(n))) {
                return fail(1, "the daemon closed the connection");
            }
        }
        if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = ::read(sock, buffer.data(), buffer.size());
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return 0;  // the daemon is done
            if (!write_all(STDOUT_FILENO, buffer.data(), static_cast<size_t>(n)))
                return 0;  // the client is gone
        }
    }
}
