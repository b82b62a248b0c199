// DirLock: a BSD lock that keeps systemd-tmpfiles' aging out of a directory.
//
// systemd-tmpfiles (>= 242), while aging a configured path, opens each
// subdirectory it descends into and tries flock(LOCK_EX|LOCK_NB) on it; when
// that fails it skips the directory and everything below it (252 checks
// directories only; 254 and later also lock files before unlinking them).
// An exclusive request conflicts with any lock, so a *shared* lock is enough
// to keep tmpfiles out, and it is what we take: it does not conflict with
// other shared holders, so preparing the same directory again (a fresh lock
// on a fresh descriptor) or a worker taking its own shared lock never blocks.
//
// Contract: the lock lives on a private open file description (a fresh
// openat of "."), so it is independent of the descriptor it was made from and
// is released exactly when the DirLock is destroyed or release()d. It is never
// waited for: if tmpfiles is inside the directory right now (holding its
// exclusive lock), acquire() fails with EWOULDBLOCK and the caller retries
// later; the event loop never blocks on it. The error then names the holder
// as /proc/locks shows it (lock_holder.h). Anyone who can open the directory
// can take a lock on it: a busy lock is never the worker's fault. Note that tmpfiles only checks
// directories *below* the path an aging rule names: a lock on the rule's own
// path, or on a parent of it, does not stop it.
#pragma once

#include <filesystem>

#include "base/result.h"
#include "base/unique_fd.h"

namespace infervisor {

class DirLock {
  public:
    DirLock() = default;

    // Locks the directory `dir_fd` refers to (any descriptor of it, O_PATH too).
    // `procfs` is where the holder of a conflicting lock is looked up.
    static Result<DirLock> acquire(int dir_fd, const std::filesystem::path& shown,
                                   const std::filesystem::path& procfs = "/proc");

    bool held() const { return fd_.valid(); }
    void release() { fd_.reset(); }

  private:
    explicit DirLock(UniqueFd fd) : fd_(std::move(fd)) {}
    UniqueFd fd_;
};

}  // namespace infervisor
