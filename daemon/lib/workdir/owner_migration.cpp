#include "workdir/owner_migration.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "workdir/tree_removal.h"
#include "workdir/tree_walk.h"

namespace infervisor {

namespace {

constexpr unsigned kMigrationStatx = STATX_TYPE | STATX_MODE | STATX_UID | STATX_GID | STATX_NLINK;

class MigrationVisitor final : public TreeVisitor {
  public:
    MigrationVisitor(const std::string& shown, uid_t from_uid, gid_t from_gid, uid_t to_uid,
                     gid_t to_gid, size_t max_entries, const struct statx& root)
        : shown_(shown),
          from_uid_(from_uid),
          from_gid_(from_gid),
          to_uid_(to_uid),
          to_gid_(to_gid),
          max_entries_(max_entries),
          dev_major_(root.stx_dev_major),
          dev_minor_(root.stx_dev_minor) {}

    Result<Next> visit(int dir_fd, const char* name, const struct statx& sx, int) override {
        if (++visited_ > max_entries_)
            return plain_error("hand " + shown_ + " over: more than " +
                               std::to_string(max_entries_) +
                               " entries; the rest keeps its old owner (chown it by hand)");
        if (sx.stx_dev_major != dev_major_ || sx.stx_dev_minor != dev_minor_)
            return Next::skip;  // another mount: not ours to change
        if (sx.stx_uid == from_uid_) {
            if (S_ISREG(sx.stx_mode) && sx.stx_nlink > 1) {
                ++result_.skipped_links;
            } else {
                gid_t gid = sx.stx_gid == from_gid_ ? to_gid_ : static_cast<gid_t>(-1);
                if (::fchownat(dir_fd, name, to_uid_, gid, AT_SYMLINK_NOFOLLOW) < 0 &&
                    errno != ENOENT)
                    return errno_error("chown " + shown_ + "/.../" + name);
                ++result_.changed;
            }
        }
        return Next::descend;
    }
    // Replaced since the stat (by a symlink, a file): never followed.
    Result<void> replaced(int, const char*) override { return {}; }
    Result<void> too_deep(int, const char*) override {
        return plain_error("hand " + shown_ + " over: deeper than " +
                           std::to_string(kMaxRemovalDepth) + " levels");
    }

    const OwnerMigration& result() const { return result_; }

  private:
    const std::string& shown_;
    uid_t from_uid_;
    gid_t from_gid_;
    uid_t to_uid_;
    gid_t to_gid_;
    size_t max_entries_;
    uint32_t dev_major_, dev_minor_;
    size_t visited_ = 0;
    OwnerMigration result_;
};

}  // namespace

Result<OwnerMigration> migrate_tree_owner(int dir_fd, const std::string& shown, uid_t from_uid,
                                          gid_t from_gid, uid_t to_uid, gid_t to_gid,
                                          size_t max_entries) {
    struct statx sx;
    if (::statx(dir_fd, "", AT_EMPTY_PATH, STATX_TYPE, &sx) < 0)
        return errno_error("stat " + shown);
    MigrationVisitor visitor(shown, from_uid, from_gid, to_uid, to_gid, max_entries, sx);
    TreeWalkOptions options{kMigrationStatx, kMaxRemovalDepth, false};
    if (auto r = walk_tree(dir_fd, shown, visitor, options); !r) return r.error();
    return visitor.result();
}

}  // namespace infervisor
