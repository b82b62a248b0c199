// Recursive removal of a worker's directory, safe against what the worker
// left inside it.
//
// Contract: removes parent_fd/name and everything below it with
// openat(O_NOFOLLOW|O_DIRECTORY) + unlinkat, never by path and never
// following a symbolic link: a symlink (at any depth, `name` itself included)
// is unlinked, its target untouched. It never descends into another mount: a
// mount point at or below `name` makes the removal fail with EBUSY, leaving that
// mount's contents alone. A missing `name` is success.
//
// Its memory is bounded whatever the tree holds (tree_walk.h: one buffer and
// one descriptor per open level), and no size ends it early: a tree of any
// number of entries and any depth is removed completely. A directory deeper
// than `max_depth` levels is first moved up into `name` itself (renameat2
// within the tree, RENAME_NOREPLACE) and removed in a later pass over `name`;
// passes go on while each removes something, so the call either removes
// everything or fails saying what is left.
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

Result<void> remove_workdir_tree(int parent_fd, const std::string& name,
                                 int max_depth = kMaxRemovalDepth);
// Removes everything inside the open directory `dir_fd`, the directory
// itself kept (the same walk; `shown` names it in errors).
Result<void> remove_tree_contents(int dir_fd, const std::string& shown,
                                  int max_depth = kMaxRemovalDepth);

}  // namespace infervisor
