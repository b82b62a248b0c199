#include "workdir/tree_removal.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vector>

#include "base/unique_fd.h"
#include "workdir/dir_entries.h"
#include "workdir/safe_path.h"

namespace infervisor {

namespace {

struct Device {
    uint32_t major = 0, minor = 0;
};

Result<std::vector<std::string>> list_names(int dir_fd, const std::string& shown) {
    UniqueFd own(::openat(dir_fd, ".", kOpenDirNoFollow));
    if (!own) return errno_error("open " + shown);
    return read_dir_names(std::move(own), shown);
}

Result<void> unlink_entry(int dir_fd, const std::string& name, const std::string& shown,
                          int flags) {
    if (::unlinkat(dir_fd, name.c_str(), flags) < 0 && errno != ENOENT)
        return errno_error("remove " + shown);
    return {};
}

// As in disk_usage.cpp: the mount-root attribute where the kernel has it
// (bind mounts included), the device number otherwise.
bool is_mount_root(const struct statx& sx, const Device& dev) {
    if (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT)
        return sx.stx_attributes & STATX_ATTR_MOUNT_ROOT;
    return sx.stx_dev_major != dev.major || sx.stx_dev_minor != dev.minor;
}

Result<void> remove_entry(int dir_fd, const std::string& name, const std::string& shown,
                          const Device& dev, int depth);

Result<void> remove_children(int dir_fd, const std::string& shown, const Device& dev, int depth) {
    if (depth > kMaxRemovalDepth)
        return plain_error("remove " + shown + ": deeper than " + std::to_string(kMaxRemovalDepth) +
                           " levels");
    auto names = list_names(dir_fd, shown);
    if (!names) return names.error();
    for (const auto& name : *names)
        if (auto r = remove_entry(dir_fd, name, shown + "/" + name, dev, depth); !r) return r;
    return {};
}

Result<void> remove_entry(int dir_fd, const std::string& name, const std::string& shown,
                          const Device& dev, int depth) {
    struct statx sx;
    if (::statx(dir_fd, name.c_str(), AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_TYPE, &sx) < 0)
        return errno == ENOENT ? Result<void>() : errno_error("stat " + shown);
    if (!S_ISDIR(sx.stx_mode)) return unlink_entry(dir_fd, name, shown, 0);
    if (is_mount_root(sx, dev))
        return Error{EBUSY, "remove " + shown + ": a file system is mounted there; not descending"};
    UniqueFd child(::openat(dir_fd, name.c_str(), kOpenDirNoFollow));
    if (!child) {
        // Replaced by a symlink or file since the stat: remove that, never follow it.
        if (errno == ELOOP || errno == ENOTDIR) return unlink_entry(dir_fd, name, shown, 0);
        return errno == ENOENT ? Result<void>() : errno_error("open " + shown);
    }
    if (auto r = remove_children(child.get(), shown, dev, depth + 1); !r) return r;
    return unlink_entry(dir_fd, name, shown, AT_REMOVEDIR);
}

}  // namespace

Result<void> remove_workdir_tree(int parent_fd, const std::string& name) {
    if (!is_plain_name(name)) return plain_error("not a plain directory name: '" + name + "'");
    struct statx sx;
    if (::statx(parent_fd, "", AT_EMPTY_PATH, STATX_TYPE, &sx) < 0)
        return errno_error("stat parent of " + name);
    return remove_entry(parent_fd, name, name, Device{sx.stx_dev_major, sx.stx_dev_minor}, 0);
}

}  // namespace infervisor
