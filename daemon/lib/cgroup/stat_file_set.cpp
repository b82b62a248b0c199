#include "cgroup/stat_file_set.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace infervisor {

namespace {

constexpr size_t kFirstReadSize = 4096;
constexpr size_t kMaxStatFile = 1 << 20;

// The read buffer of every set on this thread (see the contract).
thread_local std::string text_;

// Whether descriptor `fd` may be held: it lies below the soft limit less
// the reserve (read afresh: the limit may be raised after start).
bool may_hold(int fd) {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return false;
    if (limit.rlim_cur == RLIM_INFINITY) return true;
    return static_cast<rlim_t>(fd) + kFdReserve < limit.rlim_cur;
}

// The held descriptor no longer reaches a live file: the cgroup it was
// opened in was removed.
bool stale(int code) { return code == ENODEV || code == ESTALE; }

}  // namespace

StatFileSet::File& StatFileSet::entry(std::string_view name) {
    auto it =
        std::find_if(files_.begin(), files_.end(), [&](const File& f) { return f.name == name; });
    if (it != files_.end()) return *it;
    files_.push_back(File{std::string(name), UniqueFd()});
    return files_.back();
}

Result<void> StatFileSet::open_file(File& file) {
    if (!dir_fd_) {
        dir_fd_.reset(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (!dir_fd_) return errno_error("open " + dir_.string());
    }
    file.fd.reset(::openat(dir_fd_.get(), file.name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!file.fd) return errno_error("open " + (dir_ / file.name).string());
    return {};
}

Result<std::string_view> StatFileSet::read_held(File& file) {
    text_.resize(kFirstReadSize);
    size_t have = 0;
    for (;;) {
        ssize_t n = ::pread(file.fd.get(), text_.data() + have, text_.size() - have,
                            static_cast<off_t>(have));
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno_error("read " + (dir_ / file.name).string());
        }
        have += static_cast<size_t>(n);
        // A short read is the end: kernfs and procfs files fill the buffer
        // while there is more.
        if (have < text_.size() || n == 0) break;
        if (text_.size() >= kMaxStatFile) break;
        text_.resize(std::min(text_.size() * 2, kMaxStatFile));
    }
    text_.resize(have);
    return std::string_view(text_);
}

Result<std::string_view> StatFileSet::read_opening(File& file) {
    if (!file.fd) {
        if (auto opened = open_file(file); !opened) return opened.error();
        if (!may_hold(file.fd.get())) {
            auto text = read_held(file);
            file.fd.reset();
            return text;
        }
    }
    return read_held(file);
}

Result<std::string_view> StatFileSet::read(std::string_view name) {
    File& file = entry(name);
    auto text = read_opening(file);
    if (text || !stale(text.error().code)) return text;
    // Removed under us: the directory may be there again (a restart).
    file.fd.reset();
    dir_fd_.reset();
    return read_opening(file);
}

void StatFileSet::close_all() {
    files_.clear();
    dir_fd_.reset();
}

size_t StatFileSet::held() const {
    return static_cast<size_t>(
        std::count_if(files_.begin(), files_.end(), [](const File& f) { return bool(f.fd); }));
}

}  // namespace infervisor
