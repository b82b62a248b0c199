#include "cgroup/kernfs_watch.h"

#include <fcntl.h>
#include <unistd.h>

namespace infervisor {

Result<UniqueFd> open_change_watch(const std::filesystem::path& file) {
    UniqueFd fd(::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    if (!fd) return errno_error("open " + file.string());
    consume_change(fd.get());
    return fd;
}

void consume_change(int fd) {
    char buffer[512];
    if (::lseek(fd, 0, SEEK_SET) < 0) return;
    while (::read(fd, buffer, sizeof buffer) > 0) {
    }
}

}  // namespace infervisor
