#include "workdir/owner_migration.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/unique_fd.h"
#include "workdir/dir_entries.h"
#include "workdir/tree_removal.h"

namespace infervisor {

namespace {

struct Walk {
    uid_t from_uid;
    gid_t from_gid;
    uid_t to_uid;
    gid_t to_gid;
    size_t max_entries;
    dev_t dev;
    size_t visited = 0;
    OwnerMigration result;
};

Result<void> migrate_children(int dir_fd, const std::string& shown, Walk& walk, int depth);

Result<void> migrate_entry(int dir_fd, const std::string& name, const std::string& shown,
                           Walk& walk, int depth) {
    if (++walk.visited > walk.max_entries)
        return plain_error("hand " + shown + " over: more than " +
                           std::to_string(walk.max_entries) +
                           " entries; the rest keeps its old owner (chown it by hand)");
    struct stat st;
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? Result<void>() : errno_error("stat " + shown);
    if (st.st_dev != walk.dev) return {};  // another mount: not ours to change
    if (st.st_uid == walk.from_uid) {
        if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
            ++walk.result.skipped_links;
        } else {
            gid_t gid = st.st_gid == walk.from_gid ? walk.to_gid : static_cast<gid_t>(-1);
            if (::fchownat(dir_fd, name.c_str(), walk.to_uid, gid, AT_SYMLINK_NOFOLLOW) < 0 &&
                errno != ENOENT)
                return errno_error("chown " + shown);
            ++walk.result.changed;
        }
    }
    if (!S_ISDIR(st.st_mode)) return {};
    UniqueFd child(::openat(dir_fd, name.c_str(), kOpenDirNoFollow));
    if (!child) return {};  // replaced since the stat (by a symlink, a file): never followed
    return migrate_children(child.get(), shown, walk, depth + 1);
}

Result<void> migrate_children(int dir_fd, const std::string& shown, Walk& walk, int depth) {
    if (depth > kMaxRemovalDepth)
        return plain_error("hand " + shown + " over: deeper than " +
                           std::to_string(kMaxRemovalDepth) + " levels");
    UniqueFd own(::openat(dir_fd, ".", kOpenDirNoFollow));
    if (!own) return errno_error("open " + shown);
    auto names = read_dir_names(std::move(own), shown);
    if (!names) return names.error();
    for (const auto& name : *names)
        if (auto r = migrate_entry(dir_fd, name, shown + "/" + name, walk, depth); !r) return r;
    return {};
}

}  // namespace

Result<OwnerMigration> migrate_tree_owner(int dir_fd, const std::string& shown, uid_t from_uid,
                                          gid_t from_gid, uid_t to_uid, gid_t to_gid,
                                          size_t max_entries) {
    struct stat st;
    if (::fstat(dir_fd, &st) < 0) return errno_error("stat " + shown);
    Walk walk{from_uid, from_gid, to_uid, to_gid, max_entries, st.st_dev};
    if (auto r = migrate_children(dir_fd, shown, walk, 0); !r) return r.error();
    return walk.result;
}

}  // namespace infervisor
