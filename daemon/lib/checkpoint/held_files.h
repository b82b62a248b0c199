// What a worker's processes hold open, by inode, and the check that a criu
// restore handed them back nothing else (issue 26, defect 1).
//
// criu restore reopens every regular file, mapping, cwd, root and exe of an
// image by the path it recorded, as root, following symlinks and checking
// only the size (criu 3.17 files-reg.c, open_path() and validate_file()). The
// worker owns the dirs those paths go through: between a dump and the next
// restore it can rename a symlink to /etc/shadow over a file it held, and the
// restore would hand it a root-opened descriptor of the target. A path proves
// nothing; an inode does. So:
//  - at a dump, the daemon records every file the worker's processes hold
//    (read through the /proc magic links, never by a path the worker names)
//    as (device, inode, birth time) in the root-owned record of the image;
//  - the restore runs with --leave-stopped, and before any restored task runs
//    each file it holds must be one of those, or a fresh object criu made for
//    it (is_fresh_object); anything else and the restored tree is killed.
// The birth time tells a recycled inode number from the file that had it.
// A file system whose device numbers change at a boot (btrfs subvolumes,
// device-mapper renumbering) makes such a restore refused: the safe side.
#pragma once

#include <sys/types.h>

#include <compare>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace infervisor {

// One file as the kernel identifies it.
struct HeldFile {
    uint64_t dev = 0;  // st_dev, as makedev(major, minor)
    uint64_t ino = 0;
    int64_t btime_sec = 0;  // birth time; 0.0 where the file system keeps none
    uint32_t btime_nsec = 0;

    auto operator<=>(const HeldFile&) const = default;
};

// A worker that holds more distinct files than this is not dumped: the
// record (and the daemon's memory for it) stays bounded.
inline constexpr size_t kMaxHeldFiles = 16384;

// "8:1:1234:1733312345.123456789"; the inverse is strict (nullopt on any
// other text).
std::string format_held_file(const HeldFile& file);
std::optional<HeldFile> parse_held_file(std::string_view text);

// Blocking. Adds to `held` every file that `pids` hold below `procfs`: each
// /proc/PID/fd/N, /proc/PID/map_files/* entry, cwd, root and exe, stat(2)ed
// through the magic link. Fresh objects are left out. A process that has
// exited meanwhile is skipped. An error past kMaxHeldFiles distinct files.
Result<void> add_held_files(const std::filesystem::path& procfs, const std::vector<pid_t>& pids,
                            std::set<HeldFile>& held);

// Blocking. The first file that `pids` hold which is neither in `held` nor a
// fresh object, in words ("pid 42 fd 3 is /etc/shadow (inode 8:1:1234:...),
// which the worker did not hold at the checkpoint"); nullopt when there is
// none. `owner` is the worker's uid (see is_fresh_object). A process that has
// exited meanwhile is skipped.
std::optional<std::string> first_unheld_file(const std::filesystem::path& procfs,
                                             const std::vector<pid_t>& pids,
                                             const std::set<HeldFile>& held, uid_t owner);

// A dir criu creates something in, as root, at a restore, before any
// restored task exists: a deleted regular file the worker held is re-created
// there from the image ("<path>.cr.<id>.ghost", criu 3.17 files-reg.c), a
// unix socket bound to a path is bound there again (sk-unix.c). That dir must
// still be the one it was at the dump, reached without a symlink.
struct GhostDir {
    std::string path;  // absolute, as /proc showed it; no newline
    HeldFile dir;

    bool operator==(const GhostDir&) const = default;
};

// Blocking. Adds the dir of each deleted regular file and of each unix
// socket bound to a path (from /proc/PID/net/unix) that `pids` hold, once per
// dir, resolved with RESOLVE_NO_SYMLINKS. An error when one cannot be
// resolved so (gone, a newline in its name, a symlink on the way) or a
// socket's name is relative: the dump is refused, since its restore could
// not be checked.
Result<void> add_ghost_dirs(const std::filesystem::path& procfs, const std::vector<pid_t>& pids,
                            std::vector<GhostDir>& dirs);

// Blocking, before a restore: the first recorded dir that no longer resolves
// without a symlink to the same dir, in words; nullopt when all do.
std::optional<std::string> first_moved_ghost_dir(const std::vector<GhostDir>& dirs);

}  // namespace infervisor
