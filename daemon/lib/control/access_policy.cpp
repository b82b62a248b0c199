#include "control/access_policy.h"

#include <grp.h>

#include <algorithm>
#include <vector>

namespace infervisor {

bool AccessPolicy::may_change(const PeerCredentials& peer) const {
    if (peer.uid == 0) return true;
    if (!control_group) return false;
    if (peer.gid == *control_group) return true;
    return std::find(peer.groups.begin(), peer.groups.end(), *control_group) != peer.groups.end();
}

Result<gid_t> lookup_group(const std::string& name) {
    std::vector<char> buffer(4096);
    struct group entry {};
    struct group* found = nullptr;
    for (;;) {
        int rc = ::getgrnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found);
        if (rc == ERANGE && buffer.size() < (1u << 20)) {
            buffer.resize(buffer.size() * 2);
            continue;
        }
        if (rc != 0) {
            errno = rc;
            return errno_error("look up group " + name);
        }
        if (!found) return plain_error("no group named " + name);
        return found->gr_gid;
    }
}

}  // namespace infervisor
