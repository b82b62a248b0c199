// The control socket's file: created safely, removed only if still ours.
//
// Creation: a stale socket file (one that refuses connections: its daemon is
// gone) is replaced; a live listener, or anything at the path that is not a
// socket (a file, directory or symlink), is an error and is left alone. The
// parent directory is created (mode 0755) if missing. The socket is bound
// with the umask's restrictive default and only then opened up to `mode`.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <filesystem>

#include "base/result.h"
#include "base/unique_fd.h"

namespace infervisor {

struct BoundSocket {
    UniqueFd fd;  // listening, non-blocking, close-on-exec
    dev_t dev = 0;
    ino_t ino = 0;  // identity of the socket file we created
};

Result<BoundSocket> bind_control_socket(const std::filesystem::path& path, mode_t mode);

// Unlinks `path` if it is still the socket file `bound` created, so that a
// successor's socket is never removed.
void unlink_control_socket(const std::filesystem::path& path, const BoundSocket& bound);

}  // namespace infervisor
