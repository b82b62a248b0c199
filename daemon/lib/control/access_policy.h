// AccessPolicy: who may change things over the control socket.
//
// Anyone who can open the socket may read (list, show, events, validate, a
// worker's checkpoint list: ids, times and sizes, never their contents).
// Changing anything (start, stop, restart, kill, reload, deleting
// checkpoints) needs uid 0 or the control group as primary or supplementary
// group of the connecting process.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "base/result.h"
#include "control/peer_credentials.h"

namespace infervisor {

struct AccessPolicy {
    std::optional<gid_t> control_group;  // nullopt: only root may change things

    bool may_change(const PeerCredentials& peer) const;
};

// The gid of a group by name (getgrnam_r); for start-up, not the event loop.
Result<gid_t> lookup_group(const std::string& name);

}  // namespace infervisor
