// FlockHolder: another process that holds flock(LOCK_EX) on a directory, as
// an unprivileged user (or systemd-tmpfiles) would; released when destroyed.
#pragma once

#include <sys/types.h>

#include <filesystem>

namespace infervisor::testing {

class FlockHolder {
  public:
    // Returns once the child holds the lock.
    explicit FlockHolder(const std::filesystem::path& dir);
    ~FlockHolder();
    FlockHolder(const FlockHolder&) = delete;
    FlockHolder& operator=(const FlockHolder&) = delete;

    pid_t pid() const { return pid_; }
    // Kills the child and waits for it: the lock is gone on return.
    void release();

  private:
    pid_t pid_ = -1;
};

}  // namespace infervisor::testing
