// Sealing a finished checkpoint: before the daemon measures a checkpoint and
// decides whether it is kept, it takes the tree from the worker that wrote it
// (issue 26 #9), so that what was measured is what stays.
//
// Why root, and why an ACL. A tree the worker owns can be grown or changed
// after it was measured: the owner may always chmod its files writable
// again, so read-only modes bind nothing, and a group-readable tree
// (root:GROUP) would show the checkpoint (prompts, KV caches) to everyone in
// a group that a named user shares with others (the reason credentials are
// not group-readable either, issue 26 defect 5). So every entry becomes
// root's, mode u=rwX at most (no group, no other, no set-id bits), and the
// worker's uid gets read access only (r, x on directories and on files that
// were executable) through a POSIX access ACL: it can restore from its
// checkpoint ($INFERVISOR_RESTORE_FROM) and can neither write, add, remove
// nor re-mode anything in it. criu images (written as root) are sealed the
// same way with no ACL: only root (criu) reads them. A file system without
// ACL support refuses the seal for a non-root worker (its checkpoints could
// not be read back), and the checkpoint is refused: it fails cleanly.
//
// A writable descriptor held across the handover. Permissions are checked at
// open(2): a worker that opened a file for writing (or mapped it shared)
// before the seal could still write through it. The seal therefore asks the
// kernel, after the file is root's, whether anyone has it open for writing
// (a read lease, F_SETLEASE F_RDLCK, is refused exactly then) and refuses the
// checkpoint when so. Once a file is root's nobody but root can open it for
// writing, so the answer stays true. Where leases are unavailable (sysctl
// fs.leases-enable=0) this check cannot be made; the periodic sweep
// (supervise/worker_checkpoints.h) re-measures published checkpoints and
// retires any that grew beyond the quota, and a held descriptor dies with
// the run that held it anyway.
//
// Contract: blocking (one walk of the tree, tree_walk.h's: no symlink
// followed, no mount crossed, bounded memory). Top-down: a directory is made
// root's before its entries are looked at, so the worker can no longer add,
// remove or swap entries in it (it lacks write permission from then on).
// Refused, and the tree left partly root's (the caller deletes it): an entry
// below the top owned by another uid than `writer` (a hard link to someone
// else's file, root's included), one that is not a regular file, a directory or a symbolic link, a
// directory deeper than the walk goes, a file still open for writing, an
// entry swapped during the walk. Symbolic links are made root's and kept as
// they are (never followed: not by the daemon, and a restore that follows
// one reads only what the worker could read anyway).
#pragma once

#include <sys/types.h>

#include <string>

#include "base/result.h"

namespace infervisor {

// `dir_fd`: the checkpoint's top directory (opened O_RDONLY|O_DIRECTORY|
// O_NOFOLLOW); `shown` names it in errors. `writer`: the uid that wrote it
// (0 for criu); `reader`: the uid that may read it afterwards (0: root only).
Result<void> seal_checkpoint_tree(int dir_fd, const std::string& shown, uid_t writer, uid_t reader);

}  // namespace infervisor
