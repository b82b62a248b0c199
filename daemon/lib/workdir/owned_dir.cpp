#include "workdir/owned_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "workdir/safe_path.h"

namespace infervisor {

namespace {

constexpr int kOpenDir = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

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

Result<UniqueFd> open_or_create(int parent_fd, const std::string& name,
                                const std::filesystem::path& shown) {
    UniqueFd fd(::openat(parent_fd, name.c_str(), kOpenDir));
    if (fd) return fd;
    if (errno != ENOENT) return explain_open_failure(parent_fd, name, shown);
    // Created root-owned and private; handed over below, once opened.
    if (::mkdirat(parent_fd, name.c_str(), 0700) < 0 && errno != EEXIST)
        return errno_error("create directory " + shown.string());
    fd.reset(::openat(parent_fd, name.c_str(), kOpenDir));
    if (!fd) return explain_open_failure(parent_fd, name, shown);
    return fd;
}

}  // namespace

Result<UniqueFd> ensure_owned_dir(int parent_fd, const std::string& name,
                                  const std::filesystem::path& shown, const DirOwner& owner) {
    if (!is_plain_name(name)) return plain_error("not a plain directory name: '" + name + "'");
    auto fd = open_or_create(parent_fd, name, shown);
    if (!fd) return fd.error();
    struct stat st;
    if (::fstat(fd->get(), &st) < 0) return errno_error("stat " + shown.string());
    if (st.st_uid != 0 && st.st_uid != owner.uid)
        return plain_error(shown.string() + " is owned by uid " + std::to_string(st.st_uid) +
                           ", neither root nor the worker's uid " + std::to_string(owner.uid) +
                           "; refusing to take it over");
    if (::fchown(fd->get(), owner.uid, owner.gid) < 0)
        return errno_error("chown " + shown.string());
    if (::fchmod(fd->get(), owner.mode) < 0) return errno_error("chmod " + shown.string());
    return fd;
}

}  // namespace infervisor
