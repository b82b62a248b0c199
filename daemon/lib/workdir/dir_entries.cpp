#include "workdir/dir_entries.h"

#include <dirent.h>

#include <cerrno>

namespace infervisor {

Result<std::vector<std::string>> read_dir_names(UniqueFd dir_fd, const std::string& shown) {
    if (!dir_fd) return plain_error("read " + shown + ": not open");
    DIR* dir = ::fdopendir(dir_fd.get());
    if (!dir) return errno_error("read " + shown);
    dir_fd.release();  // closedir closes it
    std::vector<std::string> names;
    errno = 0;
    while (dirent* e = ::readdir(dir)) {
        std::string name = e->d_name;
        if (name != "." && name != "..") names.push_back(std::move(name));
    }
    int read_errno = errno;
    ::closedir(dir);
    errno = read_errno;
    if (read_errno != 0) return errno_error("read " + shown);
    return names;
}

}  // namespace infervisor
