#include "workdir/tree_removal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>

#include "base/unique_fd.h"
#include "workdir/dir_entries.h"
#include "workdir/safe_path.h"
#include "workdir/tree_walk.h"

namespace infervisor {

namespace {

struct Device {
    uint32_t major = 0, minor = 0;
};

// As in disk_usage.cpp: the mount-root attribute where the kernel has it
// (bind mounts included), the device number otherwise.
bool is_mount_root(const struct statx& sx, const Device& dev) {
    if (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT)
        return sx.stx_attributes & STATX_ATTR_MOUNT_ROOT;
    return sx.stx_dev_major != dev.major || sx.stx_dev_minor != dev.minor;
}

// One pass of the removal over the tree below `top_fd`: every entry it can
// remove goes, a directory too deep to enter moves up into top_fd.
class RemovalPass final : public TreeVisitor {
  public:
    RemovalPass(int top_fd, const std::string& shown, const Device& dev, uint64_t& moved_serial)
        : top_fd_(top_fd), shown_(shown), dev_(dev), moved_serial_(moved_serial) {}

    Result<Next> visit(int dir_fd, const char* name, const struct statx& sx, int) override {
        if (!S_ISDIR(sx.stx_mode)) {
            if (auto r = unlink_entry(dir_fd, name, 0); !r) return r.error();
            return Next::skip;
        }
        if (is_mount_root(sx, dev_))
            return Error{EBUSY, "remove " + shown_ + ": a file system is mounted at " +
                                    std::string(name) + " in it; not descending"};
        return Next::descend;
    }
    // Replaced by a symlink or file since the stat: remove that, never follow it.
    Result<void> replaced(int dir_fd, const char* name) override {
        return unlink_entry(dir_fd, name, 0);
    }
    Result<void> too_deep(int dir_fd, const char* name) override {
        for (;;) {
            std::string moved = ".infervisor-removal-" + std::to_string(++moved_serial_);
            if (::renameat2(dir_fd, name, top_fd_, moved.c_str(), RENAME_NOREPLACE) == 0) {
                ++progress_;
                return {};
            }
            if (errno == ENOENT) return {};
            if (errno != EEXIST)
                return errno_error("remove " + shown_ + ": move a directory too deep to enter");
        }
    }
    Result<void> left(int dir_fd, const char* name) override {
        if (::unlinkat(dir_fd, name, AT_REMOVEDIR) == 0) {
            ++progress_;
            return {};
        }
        // Not empty (an entry the listing missed), or swapped for something
        // else since it was entered: the next pass comes back for it.
        if (errno == ENOENT || errno == ENOTEMPTY || errno == EEXIST || errno == ENOTDIR) return {};
        return errno_error("remove " + shown_ + "/.../" + name);
    }

    uint64_t progress() const { return progress_; }

  private:
    Result<void> unlink_entry(int dir_fd, const char* name, int flags) {
        if (::unlinkat(dir_fd, name, flags) == 0) {
            ++progress_;
            return {};
        }
        if (errno == ENOENT) return {};
        if (errno == EISDIR) return {};  // a directory again: the next pass enters it
        return errno_error("remove " + shown_ + "/.../" + name);
    }

    int top_fd_;
    const std::string& shown_;
    Device dev_;
    uint64_t& moved_serial_;
    uint64_t progress_ = 0;
};

bool is_empty(int dir_fd, const std::string& shown, Result<void>& error) {
    UniqueFd own(::openat(dir_fd, ".", kOpenDirNoFollow));
    if (!own) {
        error = errno_error("open " + shown);
        return false;
    }
    DirStream stream(std::move(own), shown);
    auto entry = stream.next();
    if (!entry) error = entry.error();
    return entry && !*entry;
}

// Passes over the tree below `dir_fd` until it is empty; each pass must
// remove or move something, else what is left is reported.
Result<void> empty_tree(int dir_fd, const std::string& shown, const Device& dev, int max_depth) {
    uint64_t moved_serial = 0;
    TreeWalkOptions options{STATX_TYPE, max_depth, false};
    for (;;) {
        RemovalPass pass(dir_fd, shown, dev, moved_serial);
        if (auto r = walk_tree(dir_fd, shown, pass, options); !r) return r;
        Result<void> error;
        if (is_empty(dir_fd, shown, error)) return {};
        if (!error) return error;
        if (pass.progress() == 0)
            return Error{ENOTEMPTY,
                         "remove " + shown + ": entries are left that cannot be removed"};
    }
}

}  // namespace

Result<void> remove_workdir_tree(int parent_fd, const std::string& name, int max_depth) {
    if (!is_plain_name(name)) return plain_error("not a plain directory name: '" + name + "'");
    struct statx parent;
    if (::statx(parent_fd, "", AT_EMPTY_PATH, STATX_TYPE, &parent) < 0)
        return errno_error("stat parent of " + name);
    Device dev{parent.stx_dev_major, parent.stx_dev_minor};
    struct statx sx;
    if (::statx(parent_fd, name.c_str(), AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_TYPE, &sx) <
        0)
        return errno == ENOENT ? Result<void>() : errno_error("stat " + name);
    auto unlink_it = [&](int flags) -> Result<void> {
        if (::unlinkat(parent_fd, name.c_str(), flags) < 0 && errno != ENOENT)
            return errno_error("remove " + name);
        return {};
    };
    if (!S_ISDIR(sx.stx_mode)) return unlink_it(0);
    if (is_mount_root(sx, dev))
        return Error{EBUSY, "remove " + name + ": a file system is mounted there; not descending"};
    UniqueFd dir(::openat(parent_fd, name.c_str(), kOpenDirNoFollow));
    if (!dir) {
        // Replaced by a symlink or file since the stat: remove that, never follow it.
        if (errno == ELOOP || errno == ENOTDIR) return unlink_it(0);
        return errno == ENOENT ? Result<void>() : errno_error("open " + name);
    }
    if (auto r = empty_tree(dir.get(), name, dev, max_depth); !r) return r;
    return unlink_it(AT_REMOVEDIR);
}

Result<void> remove_tree_contents(int dir_fd, const std::string& shown, int max_depth) {
    struct statx sx;
    if (::statx(dir_fd, "", AT_EMPTY_PATH, STATX_TYPE, &sx) < 0)
        return errno_error("stat " + shown);
    return empty_tree(dir_fd, shown, Device{sx.stx_dev_major, sx.stx_dev_minor}, max_depth);
}

}  // namespace infervisor
