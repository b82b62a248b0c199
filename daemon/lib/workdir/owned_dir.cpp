#include "workdir/owned_dir.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "base/unique_fd.h"
#include "workdir/owner_migration.h"
#include "workdir/safe_path.h"

namespace infervisor {

namespace {

// Why `name` could not be opened as a directory, in words.
Error explain_open_failure(int parent_fd, const std::string& name,
                           const std::filesystem::path& shown) {
    int open_errno = errno;
    struct stat st;
    if (::fstatat(parent_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISLNK(st.st_mode))
            return plain_error(shown.string() + " is a symbolic link; refusing to use it");
        if (!S_ISDIR(st.st_mode))
            return plain_error(shown.string() + " exists but is not a directory");
    }
    errno = open_errno;
    return errno_error("open directory " + shown.string());
}

struct OpenedDir {
    UniqueFd fd;
    bool created = false;
};

Result<OpenedDir> open_or_create(int parent_fd, const std::string& name,
                                 const std::filesystem::path& shown) {
    UniqueFd fd(::openat(parent_fd, name.c_str(), kOpenDirNoFollow));
    if (fd) return OpenedDir{std::move(fd), false};
    if (errno != ENOENT) return explain_open_failure(parent_fd, name, shown);
    // Created root-owned and private; handed over below, once opened.
    bool created = ::mkdirat(parent_fd, name.c_str(), 0700) == 0;
    if (!created && errno != EEXIST) return errno_error("create directory " + shown.string());
    fd.reset(::openat(parent_fd, name.c_str(), kOpenDirNoFollow));
    if (!fd) return explain_open_failure(parent_fd, name, shown);
    return OpenedDir{std::move(fd), created};
}

bool marked_for(int fd, const std::string& worker) {
    if (worker.empty()) return false;
    char value[256];
    ssize_t n = ::fgetxattr(fd, kCreatedByXattr, value, sizeof value);
    return n >= 0 && std::string(value, static_cast<size_t>(n)) == worker;
}

// Best effort: a file system without trusted xattrs keeps working, only a
// later change of the worker's uid then needs `adopt`.
void mark(int fd, const std::string& worker) {
    if (worker.empty() || marked_for(fd, worker)) return;
    (void)::fsetxattr(fd, kCreatedByXattr, worker.data(), worker.size(), 0);
}

Result<void> check_takeover(int parent_fd, int fd, const struct stat& st,
                            const std::filesystem::path& shown, const DirOwner& owner) {
    if (st.st_uid == owner.uid) return {};
    if (owner.parent_is_daemons || marked_for(fd, owner.worker)) return {};
    std::string who = st.st_uid == 0 ? "root" : "uid " + std::to_string(st.st_uid);
    if (!owner.adopt)
        return plain_error(shown.string() + " exists (owned by " + who +
                           ") and was not created by infervisord for this worker; refusing to "
                           "hand it over. If it is meant for this worker, mark it `adopt: true`");
    struct stat parent;
    if (st.st_uid != 0 && ::fstat(parent_fd, &parent) == 0 && (parent.st_mode & S_IWOTH))
        return plain_error(shown.string() + " is owned by " + who +
                           " in a directory anyone may write to: anyone could have made it; "
                           "refusing to adopt it (chown it to root first)");
    return {};
}

// The directory changes from one non-root user to another: its contents follow.
Result<void> migrate_contents(int fd, const struct stat& st, const std::filesystem::path& shown,
                              const DirOwner& owner) {
    if (st.st_uid == 0 || st.st_uid == owner.uid) return {};
    auto moved = migrate_tree_owner(fd, shown.string(), st.st_uid, st.st_gid, owner.uid, owner.gid);
    if (!moved) return moved.error();
    spdlog::info("{}: handed over from uid {} to uid {} ({} entries{})", shown.string(), st.st_uid,
                 owner.uid, moved->changed,
                 moved->skipped_links ? "; " + std::to_string(moved->skipped_links) +
                                            " hard-linked files left to their owner"
                                      : "");
    return {};
}

}  // namespace

Result<UniqueFd> ensure_owned_dir(int parent_fd, const std::string& name,
                                  const std::filesystem::path& shown, const DirOwner& owner) {
    if (!is_plain_name(name)) return plain_error("not a plain directory name: '" + name + "'");
    auto dir = open_or_create(parent_fd, name, shown);
    if (!dir) return dir.error();
    int fd = dir->fd.get();
    struct stat st;
    if (::fstat(fd, &st) < 0) return errno_error("stat " + shown.string());
    if (!dir->created) {
        if (auto r = check_takeover(parent_fd, fd, st, shown, owner); !r) return r.error();
        if (auto r = migrate_contents(fd, st, shown, owner); !r) return r.error();
    }
    mark(fd, owner.worker);
    if (::fchown(fd, owner.uid, owner.gid) < 0) return errno_error("chown " + shown.string());
    if (::fchmod(fd, owner.mode) < 0) return errno_error("chmod " + shown.string());
    return std::move(dir->fd);
}

}  // namespace infervisor
