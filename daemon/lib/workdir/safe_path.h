// Opening directories on paths that untrusted users may be able to change.
//
// The daemon is root, and a worker controls everything inside its own
// directory; a path string is therefore never handed to a system call that
// would resolve it in one go. Instead the path is walked from "/" one
// component at a time with openat(O_PATH|O_NOFOLLOW|O_DIRECTORY), each step
// relative to the directory opened in the step before, and every directory
// on the way must be trusted:
//
//  - A directory passed through must be owned by root or by `allowed_uid`
//    (the worker's own user), and must not be writable by group or others
//    unless it has the sticky bit (as /tmp has) or, for group, is root's group.
//    Anyone else could rename or replace the components below it.
//  - A symbolic link is followed only when the link is owned by root and lies
//    in a directory only root can change (owned by root; not writable by
//    group or others, or sticky): then no other user could have planted it or
//    can swap it. /var/run -> /run is such a link. Every other symlink on the
//    way is refused, and so is the last component being a symlink.
//
// What remains possible for the owner of a trusted-but-user-owned ancestor is
// to rename a different directory into place; rename(2) needs write access to
// that directory, so it can only be one the attacker already controls.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <filesystem>
#include <string>
#include <string_view>

#include "base/result.h"
#include "base/unique_fd.h"

namespace infervisor {

enum class CreateMissing { no, yes };

struct WalkOptions {
    // Besides root, the user allowed to own directories on the way.
    uid_t allowed_uid = 0;
    // Missing directories are created as root with exactly `create_mode` (no umask).
    CreateMissing create = CreateMissing::no;
    mode_t create_mode = 0755;
};

// Opens the directory at absolute `path` as an O_PATH descriptor, walking it
// as described above. Errors name the offending component and the reason.
Result<UniqueFd> open_trusted_dir(const std::filesystem::path& path, const WalkOptions& options);

// True when `st` is a directory that only root or `allowed_uid` can change the
// entries of (see the rules above).
bool is_trusted_dir(const struct stat& st, uid_t allowed_uid);

// True when `name` can be used as one path component: non-empty, no '/', not
// "." or "..".
bool is_plain_name(std::string_view name);

}  // namespace infervisor
