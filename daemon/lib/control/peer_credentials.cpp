#include "control/peer_credentials.h"

#include <sys/socket.h>

namespace infervisor {

namespace {

Result<std::vector<gid_t>> read_peer_groups(int fd) {
    std::vector<gid_t> groups(64);
    for (;;) {
        socklen_t len = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
        if (::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &len) == 0) {
            groups.resize(len / sizeof(gid_t));
            return groups;
        }
        // On ERANGE the kernel stored the size it needs in len.
        if (errno != ERANGE || len / sizeof(gid_t) <= groups.size())
            return errno_error("getsockopt SO_PEERGROUPS");
        groups.resize(len / sizeof(gid_t));
    }
}

}  // namespace

Result<PeerCredentials> read_peer_credentials(int fd) {
    struct ucred cred {};
    socklen_t len = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
        return errno_error("getsockopt SO_PEERCRED");
    auto groups = read_peer_groups(fd);
    if (!groups) return groups.error();
    return PeerCredentials{cred.uid, cred.gid, cred.pid, std::move(*groups)};
}

}  // namespace infervisor
