// Disk usage of a worker's directory tree, for its optional quota.
//
// Contract: counts allocated bytes (st_blocks * 512, what `du` reports and
// what fills a disk) of the directory and everything below it; never follows
// a symbolic link (a link counts as itself); never descends into another
// mount (a mount root below the directory, bind mounts included, is skipped
// entirely); counts a hard-linked file once. Entries that vanish during the
// walk (the worker is running) are skipped. Access times are not updated
// where O_NOATIME is allowed (root: always), so measuring does not make files
// look recently used to tmpfiles. A tree deeper than kMaxUsageDepth fails
// (one descriptor is held per level) rather than be silently undercounted.
#pragma once

#include <cstdint>

#include "base/result.h"

namespace infervisor {

inline constexpr int kMaxUsageDepth = 256;

// `dir_fd` may be any descriptor of the directory (O_PATH too).
Result<uint64_t> measure_usage(int dir_fd);

}  // namespace infervisor
