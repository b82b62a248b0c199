// A directory handed to a worker: created if absent, owned by the worker's
// user, with the configured mode.
//
// Contract: `name` is looked up in `parent_fd` (opened by open_trusted_dir)
// without following a symlink. The ownership and mode change happen with
// fchown/fchmod on the opened descriptor, never by path. Refused, with an
// error naming the path:
//  - the entry is a symbolic link or not a directory;
//  - the directory exists, is not the worker's already, and the daemon did
//    not create it: handing a directory over is for directories the daemon
//    made, or ones the operator marked `adopt: true`. (Seen otherwise:
//    /var/lib/dpkg chowned to a worker.) The daemon made it when it carries
//    the marker xattr kCreatedByXattr naming this worker (set when the
//    daemon creates a directory; only root can set trusted.* attributes), or
//    when its parent is the daemon's own (DirOwner::parent_is_daemons: the
//    state dir's workers/ and checkpoints/, a work dir for its tmp/);
//  - an adoptable directory owned by another user (not root) in a parent
//    others may write to (e.g. /tmp): anyone could have made it.
// When a directory changes hands from one non-root uid to another (a worker
// switching users), what is inside and belonged to the old uid follows
// (owner_migration.h); a directory taken from root keeps its contents as
// they are. What the worker keeps inside is never otherwise touched.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"

namespace infervisor {

// The xattr a directory the daemon created for a worker carries; its value
// is the worker's name.
inline constexpr char kCreatedByXattr[] = "trusted.infervisor.worker";

struct DirOwner {
    uid_t uid = 0;
    gid_t gid = 0;
    mode_t mode = 0700;
    // The worker's name, written into kCreatedByXattr on creation and checked
    // on an existing directory. Empty: no marker (then only a daemon-owned
    // parent or `adopt` allow taking an existing directory over).
    std::string worker = {};
    // Everything in the parent directory is the daemon's (see above).
    bool parent_is_daemons = false;
    // The operator marked the path `adopt: true`.
    bool adopt = false;
};

// Returns the directory opened O_RDONLY|O_DIRECTORY (usable for flock, fstat,
// openat, fdopendir). `shown` is the full path, for messages.
Result<UniqueFd> ensure_owned_dir(int parent_fd, const std::string& name,
                                  const std::filesystem::path& shown, const DirOwner& owner);

}  // namespace infervisor
