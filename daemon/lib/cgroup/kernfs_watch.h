// Change notification of a cgroup interface file (memory.events,
// cgroup.events, ...): kernfs_notify() wakes a poller of such a file with
// POLLPRI|POLLERR whenever its content changes (cgroup_file_notify() sends at
// most one notification per 20 ms per file).
//
// Contract: open_change_watch() returns a non-blocking read fd with its
// current notification already consumed, so the first wake-up is a real
// change; after each wake-up, consume_change() before waiting again (reading
// the file to its end marks the notification as seen; until then poll keeps
// reporting POLLPRI). The caller owns the fd and its waits.
#pragma once

#include <filesystem>

#include "base/result.h"
#include "base/unique_fd.h"

namespace infervisor {

Result<UniqueFd> open_change_watch(const std::filesystem::path& file);

void consume_change(int fd);

}  // namespace infervisor
