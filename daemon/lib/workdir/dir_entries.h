// Listing a directory through a descriptor, one entry at a time, for the
// walks that must never follow a path (usage measurement, recursive removal,
// owner migration) and never hold a directory's whole listing: a worker can
// put millions of entries in one directory, and the daemon's memory is
// locked.
//
// Contract: DirStream reads with getdents64 into a buffer of kDirStreamBuffer
// bytes, allocated once per stream; nothing else grows with the directory.
// Entries added or removed while it reads may or may not be returned (as
// readdir(3)); an entry that stays is returned once. "." and ".." are never
// returned.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "base/unique_fd.h"

namespace infervisor {

inline constexpr size_t kDirStreamBuffer = 4096;

class DirStream {
  public:
    // Takes `dir` (an open directory, not O_PATH). `shown` names it in errors.
    DirStream(UniqueFd dir, std::string shown);

    int fd() const { return fd_.get(); }
    const std::string& shown() const { return shown_; }

    // The next entry's name, valid until the next call; nullopt at the end.
    Result<std::optional<std::string_view>> next();

  private:
    UniqueFd fd_;
    std::string shown_;
    std::unique_ptr<char[]> buffer_;
    size_t filled_ = 0, offset_ = 0;
};

}  // namespace infervisor
