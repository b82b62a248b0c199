#include "metrics/textfile_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "base/unique_fd.h"

namespace infervisor {

Result<void> write_textfile_atomically(const std::filesystem::path& path, std::string_view text) {
    std::filesystem::path tmp = path;
    tmp += ".tmp";
    if (::unlink(tmp.c_str()) != 0 && errno != ENOENT)
        return errno_error("cannot remove " + tmp.string());
    UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (!fd) return errno_error("cannot create " + tmp.string());
    if (::fchmod(fd.get(), 0644) != 0) {
        auto error = errno_error("cannot make " + tmp.string() + " readable (fchmod 0644)");
        ::unlink(tmp.c_str());
        return error;
    }
    while (!text.empty()) {
        ssize_t n = ::write(fd.get(), text.data(), text.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            auto error = errno_error("cannot write " + tmp.string());
            ::unlink(tmp.c_str());
            return error;
        }
        text.remove_prefix(static_cast<size_t>(n));
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        auto error = errno_error("cannot rename " + tmp.string() + " to " + path.string());
        ::unlink(tmp.c_str());
        return error;
    }
    return {};
}

}  // namespace infervisor
