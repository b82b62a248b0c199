#include "workdir/dir_entries.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace infervisor {

namespace {

// The kernel's struct linux_dirent64 (glibc's getdents64 wrapper is 2.30+):
// u64 d_ino, s64 d_off, u16 d_reclen, u8 d_type, then the NUL-terminated
// name within d_reclen.
constexpr size_t kReclenOffset = 16;
constexpr size_t kNameOffset = 19;

}  // namespace

DirStream::DirStream(UniqueFd dir, std::string shown)
    : fd_(std::move(dir)), shown_(std::move(shown)), buffer_(new char[kDirStreamBuffer]) {}

Result<std::optional<std::string_view>> DirStream::next() {
    if (!fd_) return plain_error("read " + shown_ + ": not open");
    for (;;) {
        if (offset_ >= filled_) {
            long n = ::syscall(SYS_getdents64, fd_.get(), buffer_.get(), kDirStreamBuffer);
            if (n < 0) return errno_error("read " + shown_);
            if (n == 0) return std::optional<std::string_view>();
            filled_ = static_cast<size_t>(n);
            offset_ = 0;
        }
        const char* entry = buffer_.get() + offset_;
        uint16_t reclen = 0;
        std::memcpy(&reclen, entry + kReclenOffset, sizeof reclen);
        const char* name_start = entry + kNameOffset;
        std::string_view name(name_start, ::strnlen(name_start, reclen - kNameOffset));
        offset_ += reclen;
        if (name != "." && name != "..") return std::optional<std::string_view>(name);
    }
}

}  // namespace infervisor
