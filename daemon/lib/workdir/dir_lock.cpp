#include "workdir/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>

namespace infervisor {

Result<DirLock> DirLock::acquire(int dir_fd, const std::filesystem::path& shown) {
    UniqueFd fd(::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd) return errno_error("open " + shown.string() + " for locking");
    int r;
    do {
        r = ::flock(fd.get(), LOCK_SH | LOCK_NB);
    } while (r < 0 && errno == EINTR);
    if (r < 0) {
        if (errno == EWOULDBLOCK)
            return errno_error("lock " + shown.string() +
                               " (held exclusively, e.g. by systemd-tmpfiles cleaning it; retry)");
        return errno_error("lock " + shown.string());
    }
    return DirLock(std::move(fd));
}

}  // namespace infervisor
