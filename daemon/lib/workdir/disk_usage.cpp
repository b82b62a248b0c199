#include "workdir/disk_usage.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <unordered_set>

#include "workdir/tree_walk.h"

namespace infervisor {

namespace {

constexpr unsigned kStatxMask = STATX_TYPE | STATX_INO | STATX_NLINK | STATX_BLOCKS;

class UsageVisitor final : public TreeVisitor {
  public:
    UsageVisitor(const struct statx& root, const UsageLimits& limits)
        : limits_(limits), dev_major_(root.stx_dev_major), dev_minor_(root.stx_dev_minor) {
        usage_.bytes = root.stx_blocks * 512;
    }

    Result<Next> visit(int, const char*, const struct statx& sx, int) override {
        if (usage_.entries >= limits_.max_entries) {
            usage_.capped.entries = true;
            return Next::stop;
        }
        ++usage_.entries;
        if (is_other_mount(sx)) return Next::skip;  // bind-mounted files too
        count(sx);
        return Next::descend;
    }
    Result<void> replaced(int, const char*) override { return {}; }
    Result<void> too_deep(int, const char*) override {
        usage_.capped.depth = true;
        return {};
    }

    TreeUsage result() {
        usage_.linked_inodes = linked_.size();
        return usage_;
    }

  private:
    // STATX_ATTR_MOUNT_ROOT (5.8+) also catches bind mounts of the same file
    // system; the device comparison is only the fallback, as in
    // systemd-tmpfiles (overlayfs may report other devices for files that are
    // not mounts).
    bool is_other_mount(const struct statx& sx) const {
        if (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT)
            return sx.stx_attributes & STATX_ATTR_MOUNT_ROOT;
        return sx.stx_dev_major != dev_major_ || sx.stx_dev_minor != dev_minor_;
    }

    void count(const struct statx& sx) {
        uint64_t bytes = sx.stx_blocks * 512;
        if (S_ISDIR(sx.stx_mode) || sx.stx_nlink <= 1) {
            usage_.bytes += bytes;
        } else if (linked_.count(sx.stx_ino)) {
            // counted already
        } else if (linked_.size() < limits_.max_linked_inodes) {
            linked_.insert(sx.stx_ino);
            usage_.bytes += bytes;
        } else {
            usage_.capped.hard_links = true;
            usage_.bytes += bytes / sx.stx_nlink;
        }
    }

    const UsageLimits& limits_;
    uint32_t dev_major_, dev_minor_;
    // Inodes with several links already counted (one file system: the walk
    // crosses no mount); at most max_linked_inodes.
    std::unordered_set<uint64_t> linked_;
    TreeUsage usage_;
};

}  // namespace

std::string TreeUsage::capped_by(const UsageLimits& limits) const {
    std::string out;
    auto add = [&out](const std::string& part) { out += (out.empty() ? "" : ", ") + part; };
    if (capped.entries) add("more than " + std::to_string(limits.max_entries) + " entries");
    if (capped.depth) add("deeper than " + std::to_string(limits.max_depth) + " levels");
    if (capped.hard_links)
        add("more than " + std::to_string(limits.max_linked_inodes) + " hard-linked files");
    return out;
}

Result<TreeUsage> measure_usage(int dir_fd, const UsageLimits& limits) {
    struct statx sx;
    if (::statx(dir_fd, "", AT_EMPTY_PATH, kStatxMask, &sx) < 0)
        return errno_error("stat directory to measure");
    if (!S_ISDIR(sx.stx_mode)) return plain_error("measure usage: not a directory");
    UsageVisitor visitor(sx, limits);
    TreeWalkOptions options{kStatxMask, limits.max_depth, true};
    if (auto r = walk_tree(dir_fd, "directory", visitor, options); !r) return r.error();
    return visitor.result();
}

}  // namespace infervisor
