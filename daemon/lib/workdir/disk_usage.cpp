#include "workdir/disk_usage.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/unique_fd.h"
#include "workdir/dir_entries.h"

namespace infervisor {

namespace {

constexpr unsigned kStatxMask = STATX_TYPE | STATX_INO | STATX_NLINK | STATX_BLOCKS;

struct UsageWalk {
    uint32_t dev_major = 0, dev_minor = 0;
    std::set<uint64_t> linked_inodes;  // files with nlink > 1 already counted
    uint64_t bytes = 0;
};

UniqueFd open_dir_noatime(int parent_fd, const char* name) {
    UniqueFd fd(::openat(parent_fd, name, kOpenDirNoFollow | O_NOATIME));
    if (!fd && errno == EPERM) fd.reset(::openat(parent_fd, name, kOpenDirNoFollow));
    return fd;
}

// STATX_ATTR_MOUNT_ROOT (5.8+) also catches bind mounts of the same file
// system; the device comparison is only the fallback, as in systemd-tmpfiles
// (overlayfs may report other devices for files that are not mounts).
bool is_other_mount(const struct statx& sx, const UsageWalk& walk) {
    if (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT)
        return sx.stx_attributes & STATX_ATTR_MOUNT_ROOT;
    return sx.stx_dev_major != walk.dev_major || sx.stx_dev_minor != walk.dev_minor;
}

Result<std::vector<std::string>> list_names(int dir_fd) {
    UniqueFd own = open_dir_noatime(dir_fd, ".");
    if (!own) return errno_error("open directory");
    return read_dir_names(std::move(own), "directory");
}

void count(const struct statx& sx, UsageWalk& walk) {
    if (!S_ISDIR(sx.stx_mode) && sx.stx_nlink > 1 && !walk.linked_inodes.insert(sx.stx_ino).second)
        return;
    walk.bytes += sx.stx_blocks * 512;
}

Result<void> walk_dir(int dir_fd, int depth, UsageWalk& walk);

Result<void> visit(int dir_fd, const std::string& name, int depth, UsageWalk& walk) {
    struct statx sx;
    if (::statx(dir_fd, name.c_str(), AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, kStatxMask, &sx) < 0)
        return errno == ENOENT ? Result<void>() : errno_error("stat " + name);
    if (is_other_mount(sx, walk)) return {};  // bind-mounted files too
    count(sx, walk);
    if (!S_ISDIR(sx.stx_mode)) return {};
    UniqueFd child = open_dir_noatime(dir_fd, name.c_str());
    if (!child)
        return errno == ENOENT || errno == ELOOP || errno == ENOTDIR
                   ? Result<void>()  // replaced since the stat
                   : errno_error("open directory " + name);
    return walk_dir(child.get(), depth + 1, walk);
}

Result<void> walk_dir(int dir_fd, int depth, UsageWalk& walk) {
    if (depth > kMaxUsageDepth)
        return plain_error("directory tree deeper than " + std::to_string(kMaxUsageDepth) +
                           " levels");
    auto names = list_names(dir_fd);
    if (!names) return names.error();
    for (const auto& name : *names)
        if (auto r = visit(dir_fd, name, depth, walk); !r) return r;
    return {};
}

}  // namespace

Result<uint64_t> measure_usage(int dir_fd) {
    struct statx sx;
    if (::statx(dir_fd, "", AT_EMPTY_PATH, kStatxMask, &sx) < 0)
        return errno_error("stat directory to measure");
    if (!S_ISDIR(sx.stx_mode)) return plain_error("measure usage: not a directory");
    UsageWalk walk{sx.stx_dev_major, sx.stx_dev_minor, {}, sx.stx_blocks * 512};
    if (auto r = walk_dir(dir_fd, 0, walk); !r) return r.error();
    return walk.bytes;
}

}  // namespace infervisor
