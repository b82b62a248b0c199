// Recursive removal of a worker's directory, safe against what the worker
// left inside it.
//
// Contract: removes parent_fd/name and everything below it with
// openat(O_NOFOLLOW|O_DIRECTORY) + unlinkat, never by path and never
// following a symbolic link: a symlink (at any depth, `name` itself included)
// is unlinked, its target untouched. It never descends into another mount: a
// mount point at or below `name` makes the removal fail with EBUSY, leaving that
// mount's contents alone. A missing `name` is success. A tree deeper than
// kMaxRemovalDepth fails (one descriptor is held per level).
//
// The caller must make sure no worker runs with this directory: a running
// worker could keep creating entries (the removal would then fail with
// ENOTEMPTY) or move subdirectories out of the tree while it is walked. Safety
// holds regardless; completeness does not.
#pragma once

#include <string>

#include "base/result.h"

namespace infervisor {

inline constexpr int kMaxRemovalDepth = 256;

Result<void> remove_workdir_tree(int parent_fd, const std::string& name);

}  // namespace infervisor
