#include "control/control_socket.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

namespace infervisor {

namespace {

Result<sockaddr_un> socket_address(const std::filesystem::path& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const std::string& s = path.native();
    if (s.empty() || s.size() >= sizeof addr.sun_path) {
        errno = ENAMETOOLONG;
        return errno_error("control socket path " + s);
    }
    std::memcpy(addr.sun_path, s.c_str(), s.size() + 1);
    return addr;
}

// True when something accepts connections at `addr`.
bool listener_alive(const sockaddr_un& addr) {
    UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!probe) return false;
    int rc = ::connect(probe.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
    return rc == 0 || errno == EAGAIN || errno == EINPROGRESS;
}

// Makes room for the new socket: nothing there, or a stale socket removed.
Result<void> clear_stale_socket(const std::filesystem::path& path, const sockaddr_un& addr) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
        if (errno == ENOENT) return {};
        return errno_error("stat " + path.string());
    }
    if (!S_ISSOCK(st.st_mode))
        return plain_error(path.string() + " exists and is not a socket; not replacing it");
    if (listener_alive(addr))
        return plain_error("another process is listening on " + path.string());
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
        return errno_error("remove stale socket " + path.string());
    return {};
}

Result<void> ensure_parent(const std::filesystem::path& path) {
    auto parent = path.parent_path();
    if (parent.empty()) return {};
    if (::mkdir(parent.c_str(), 0755) != 0 && errno != EEXIST)
        return errno_error("create directory " + parent.string());
    return {};
}

}  // namespace

Result<BoundSocket> bind_control_socket(const std::filesystem::path& path, mode_t mode) {
    auto addr = socket_address(path);
    if (!addr) return addr.error();
    if (auto r = ensure_parent(path); !r) return r.error();
    if (auto r = clear_stale_socket(path, *addr); !r) return r.error();

    BoundSocket bound;
    bound.fd.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!bound.fd) return errno_error("create control socket");
    if (::bind(bound.fd.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr) != 0)
        return errno_error("bind " + path.string());
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return errno_error("stat " + path.string());
    bound.dev = st.st_dev;
    bound.ino = st.st_ino;
    if (::chmod(path.c_str(), mode) != 0) {
        auto error = errno_error("chmod " + path.string());
        unlink_control_socket(path, bound);
        return error;
    }
    if (::listen(bound.fd.get(), SOMAXCONN) != 0) {
        auto error = errno_error("listen on " + path.string());
        unlink_control_socket(path, bound);
        return error;
    }
    return bound;
}

void unlink_control_socket(const std::filesystem::path& path, const BoundSocket& bound) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return;
    if (S_ISSOCK(st.st_mode) && st.st_dev == bound.dev && st.st_ino == bound.ino)
        ::unlink(path.c_str());
}

}  // namespace infervisor
