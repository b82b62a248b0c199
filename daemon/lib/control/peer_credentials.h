// Who is on the other end of a Unix socket, as the kernel recorded it when
// the connection was made (SO_PEERCRED, SO_PEERGROUPS).
//
// Why SO_PEERGROUPS (Linux 4.13) and not /proc/PID/status or getgrouplist():
// the kernel captures the supplementary groups atomically with uid and pid at
// connect() time, so a pid that exits and is reused cannot lend its groups,
// and no NSS lookup (which may block on LDAP) runs on the event loop. It also
// gives what the process really holds, so a process that dropped its groups
// has dropped its rights, as with file permissions.
#pragma once

#include <sys/types.h>

#include <vector>

#include "base/result.h"

namespace infervisor {

struct PeerCredentials {
    uid_t uid = static_cast<uid_t>(-1);
    gid_t gid = static_cast<gid_t>(-1);
    pid_t pid = 0;
    std::vector<gid_t> groups;  // supplementary groups
};

Result<PeerCredentials> read_peer_credentials(int socket_fd);

}  // namespace infervisor
