// Who holds a BSD lock on a file: found in /proc/locks by device and inode,
// so that a start delayed by someone else's lock can say whom it waits for.
//
// Contract: best effort and bounded. /proc/locks lists every lock on the host
// (one short line each, read once with the kernel-file cap of read_file); the
// first non-waiting FLOCK line on the file's device and inode names the pid.
// The pid is as the kernel recorded it when the lock was taken (the holder may
// have exited while another process inherited the descriptor, or live in
// another pid namespace): it is a lead for the operator, not a proof.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace infervisor {

struct LockHolder {
    pid_t pid = 0;
    std::string command;  // /proc/PID/comm, empty when gone
    // "pid 1234 (flock)" or "pid 1234" or "an unknown process".
    std::string describe() const;
};

// The holder of a flock() on (dev, ino) as /proc/locks lists it.
std::optional<LockHolder> find_lock_holder(const std::filesystem::path& procfs, dev_t dev,
                                           ino_t ino);

// Parses the text of /proc/locks; exposed for tests.
std::optional<pid_t> find_flock_pid(std::string_view locks, dev_t dev, ino_t ino);

}  // namespace infervisor
