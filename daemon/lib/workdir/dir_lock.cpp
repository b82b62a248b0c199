#include "workdir/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "workdir/lock_holder.h"

namespace infervisor {

namespace {

Error busy_error(int fd, const std::filesystem::path& shown, const std::filesystem::path& procfs) {
    std::string holder = "someone else (e.g. systemd-tmpfiles cleaning it)";
    struct stat st;
    if (::fstat(fd, &st) == 0)
        if (auto found = find_lock_holder(procfs, st.st_dev, st.st_ino)) holder = found->describe();
    return Error{EWOULDBLOCK, "lock " + shown.string() + ": held exclusively by " + holder};
}

}  // namespace

Result<DirLock> DirLock::acquire(int dir_fd, const std::filesystem::path& shown,
                                 const std::filesystem::path& procfs) {
    UniqueFd fd(::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd) return errno_error("open " + shown.string() + " for locking");
    int r;
    do {
        r = ::flock(fd.get(), LOCK_SH | LOCK_NB);
    } while (r < 0 && errno == EINTR);
    if (r < 0) {
        if (errno == EWOULDBLOCK) return busy_error(fd.get(), shown, procfs);
        return errno_error("lock " + shown.string());
    }
    return DirLock(std::move(fd));
}

}  // namespace infervisor
