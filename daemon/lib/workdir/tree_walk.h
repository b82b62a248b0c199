// A depth-first walk of a directory tree through descriptors, for the walks
// of trees a worker controls (usage measurement, recursive removal, owner
// migration), done as root.
//
// Contract: never follows a symbolic link and never resolves a path: every
// entry is statx'ed with AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT relative to
// its directory's descriptor, and a directory is entered only with
// openat(O_NOFOLLOW | O_DIRECTORY) of its name in its parent's descriptor (a
// directory swapped for a symlink after its stat fails to open and is
// reported as replaced, never followed). Memory is bounded whatever the tree
// holds: one DirStream (kDirStreamBuffer bytes) and one name per open level,
// and at most `max_depth` levels are open below the root, so the deepest walk
// holds max_depth + 1 descriptors; a directory below that is reported as too
// deep instead of entered. Entries that vanish during the walk are skipped.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>

#include <string>

#include "base/result.h"

namespace infervisor {

class TreeVisitor {
  public:
    enum class Next { skip, descend, stop };
    virtual ~TreeVisitor() = default;

    // `name` in the directory `dir_fd`, `depth` levels below the root (1:
    // the root's own entries). descend enters it if it is a directory; stop
    // ends the walk at once (successfully).
    virtual Result<Next> visit(int dir_fd, const char* name, const struct statx& sx, int depth) = 0;
    // visit() said descend, but `name` is no directory any more (replaced
    // since its stat, e.g. by a symlink): it was not entered.
    virtual Result<void> replaced(int dir_fd, const char* name) = 0;
    // visit() said descend at depth max_depth: not entered.
    virtual Result<void> too_deep(int dir_fd, const char* name) = 0;
    // After the last entry of a directory that was entered.
    virtual Result<void> left(int /*dir_fd*/, const char* /*name*/) { return {}; }
};

struct TreeWalkOptions {
    unsigned statx_mask = STATX_TYPE;  // STATX_TYPE is always added
    int max_depth = 256;
    // O_NOATIME where allowed, so that a walk does not make files look used.
    bool noatime = false;
};

// Walks the tree below the directory `root_fd` (O_PATH is enough). `shown`
// names the root in errors, which name the path of the failing entry.
Result<void> walk_tree(int root_fd, const std::string& shown, TreeVisitor& visitor,
                       const TreeWalkOptions& options);

}  // namespace infervisor
