// A directory handed to a worker: created if absent, owned by the worker's
// user, with the configured mode.
//
// Contract: `name` is looked up in `parent_fd` (opened by open_trusted_dir)
// without following a symlink. The ownership and mode change happen with
// fchown/fchmod on the opened descriptor, never by path, and only on the
// directory itself: what the worker keeps inside is never chowned (a
// recursive chown by root over worker-controlled content is how symlink and
// hard-link attacks work). Refused, with an error naming the path:
//  - the entry is a symbolic link or not a directory;
//  - the directory exists and is owned by neither root nor `uid` (taking over
//    someone else's directory, e.g. one squatted in /tmp, would hand its
//    contents to the worker, or the worker's data to the squatter).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"

namespace infervisor {

struct DirOwner {
    uid_t uid = 0;
    gid_t gid = 0;
    mode_t mode = 0700;
};

// Returns the directory opened O_RDONLY|O_DIRECTORY (usable for flock, fstat,
// openat, fdopendir). `shown` is the full path, for messages.
Result<UniqueFd> ensure_owned_dir(int parent_fd, const std::string& name,
                                  const std::filesystem::path& shown, const DirOwner& owner);

}  // namespace infervisor
