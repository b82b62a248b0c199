// Handing a worker's directory tree from its old uid to its new one, when a
// worker switches users (e.g. from the shared infervisor-worker to a uid of
// its own): what the worker wrote under its old uid must become writable by
// the new one, and nothing else may change hands.
//
// Contract: walks `dir_fd`'s tree with walk_tree (tree_walk.h: openat
// O_NOFOLLOW, never by path, never following a symbolic link, memory bounded
// whatever the tree holds), never into another mount, at most
// kMaxRemovalDepth levels (deeper fails), and changes the owner of exactly the
// entries owned by `from_uid`, with fchownat(AT_SYMLINK_NOFOLLOW) (a symlink
// itself, never its target); their group moves from `from_gid` to `to_gid`
// only where it was `from_gid`. A regular file with more than one hard link
// is left alone and counted: with a shared uid another worker could have
// linked its own file here, and chowning would hand it over. At most
// `max_entries` entries are visited; beyond that it fails, saying so, with
// what it did so far kept (running it again continues). The directory itself
// is not changed (the caller fchowns it).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

#include "base/result.h"

namespace infervisor {

struct OwnerMigration {
    size_t changed = 0;
    size_t skipped_links = 0;  // regular files with several hard links
};

inline constexpr size_t kMaxMigratedEntries = 200'000;

Result<OwnerMigration> migrate_tree_owner(int dir_fd, const std::string& shown, uid_t from_uid,
                                          gid_t from_gid, uid_t to_uid, gid_t to_gid,
                                          size_t max_entries = kMaxMigratedEntries);

}  // namespace infervisor
