#include "notify/notify_socket.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "base/file_io.h"
#include "cgroup/cgroup_discovery.h"

namespace infervisor {

namespace fs = std::filesystem;

Result<NotifySocket> NotifySocket::bind(const fs::path& path, uid_t owner, gid_t group) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.string().size() >= sizeof(addr.sun_path))
        return plain_error("notify socket path too long: " + path.string());
    std::strcpy(addr.sun_path, path.c_str());

    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            return plain_error("refusing to replace " + path.string() + ": not a socket");
        ::unlink(path.c_str());
    }
    UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd) return errno_error("socket(AF_UNIX, SOCK_DGRAM)");
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
        return errno_error("bind " + path.string());
    int one = 1;
    if (::setsockopt(fd.get(), SOL_SOCKET, SO_PASSCRED, &one, sizeof one) != 0)
        return errno_error("setsockopt SO_PASSCRED");
    // The path is in our own runtime dir, which no worker can write to.
    if (::lchown(path.c_str(), owner, group) != 0) return errno_error("chown " + path.string());
    if (::chmod(path.c_str(), 0600) != 0) return errno_error("chmod " + path.string());
    struct stat bound {};
    if (::lstat(path.c_str(), &bound) != 0) return errno_error("stat " + path.string());
    return NotifySocket(std::move(fd), path, bound.st_dev, bound.st_ino);
}

NotifySocket::~NotifySocket() {
    if (!fd_) return;
    struct stat now {};
    if (::lstat(path_.c_str(), &now) == 0 && now.st_dev == dev_ && now.st_ino == ino_)
        ::unlink(path_.c_str());
}

Result<std::optional<NotifyDatagram>> NotifySocket::receive() {
    char buf[kMaxDatagram + 1];
    iovec iov{buf, sizeof buf};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t n = ::recvmsg(fd_.get(), &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC | MSG_TRUNC);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
            return std::optional<NotifyDatagram>{};
        return errno_error("recvmsg on " + path_.string());
    }
    NotifyDatagram d;
    d.truncated = (msg.msg_flags & MSG_TRUNC) || static_cast<size_t>(n) > kMaxDatagram;
    d.data.assign(buf, std::min(static_cast<size_t>(n), kMaxDatagram));
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
            ucred cred{};
            std::memcpy(&cred, CMSG_DATA(c), sizeof cred);
            d.pid = cred.pid;
            d.uid = cred.uid;
        } else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            // A worker may not hand us file descriptors: close them all.
            size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < count; ++i) {
                int passed;
                std::memcpy(&passed, CMSG_DATA(c) + i * sizeof(int), sizeof passed);
                ::close(passed);
            }
        }
    }
    return std::optional<NotifyDatagram>{std::move(d)};
}

bool process_in_cgroup(const fs::path& procfs, pid_t pid, const std::string& cgroup_path) {
    if (pid <= 0) return false;
    auto text = read_file(procfs / std::to_string(pid) / "cgroup");
    if (!text) return false;
    auto path = find_cgroup2_path(*text);
    if (!path) return false;
    return *path == cgroup_path || path->rfind(cgroup_path + "/", 0) == 0;
}

}  // namespace infervisor
