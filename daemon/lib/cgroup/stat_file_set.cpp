#include "cgroup/stat_file_set.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>

namespace infervisor {

namespace {

constexpr size_t kFirstReadSize = 4096;
constexpr size_t kMaxStatFile = 1 << 20;
// A buffer grown past this for one large file is given back at the next read.
constexpr size_t kKeptBufferSize = 64 << 10;

// The read buffer of every set on this thread (see the contract). Grown as a
// file needs and never filled: std::string::resize writes every byte it
// adds, and resizing to 4 KiB before each read was 4 KiB of zeros per file
// per sample, a twentieth of the idle daemon's CPU under emulation (issue 28).
class ReadBuffer {
  public:
    char* data() { return data_.get(); }
    size_t size() const { return size_; }
    // At least `size` bytes, the first `kept` of them unchanged.
    void grow(size_t size, size_t kept) {
        if (size <= size_) return;
        auto bigger = std::make_unique_for_overwrite<char[]>(size);
        std::copy_n(data_.get(), std::min(kept, size_), bigger.get());
        data_ = std::move(bigger);
        size_ = size;
    }
    // Back to the first read's size if one large file grew it.
    void trim() {
        if (size_ <= kKeptBufferSize) return;
        data_.reset();
        size_ = 0;
    }

  private:
    std::unique_ptr<char[]> data_;
    size_t size_ = 0;
};

thread_local ReadBuffer buffer_;

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
    buffer_.trim();
    buffer_.grow(kFirstReadSize, 0);
    size_t have = 0;
    for (;;) {
        ssize_t n = ::pread(file.fd.get(), buffer_.data() + have, buffer_.size() - have,
                            static_cast<off_t>(have));
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno_error("read " + (dir_ / file.name).string());
        }
        have += static_cast<size_t>(n);
        // A short read is the end: kernfs and procfs files fill the buffer
        // while there is more.
        if (have < buffer_.size() || n == 0) break;
        if (buffer_.size() >= kMaxStatFile) break;
        buffer_.grow(std::min(buffer_.size() * 2, kMaxStatFile), have);
    }
    return std::string_view(buffer_.data(), have);
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
