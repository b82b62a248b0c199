// Disk usage of a worker's directory tree, for its optional quota and for
// the size of a checkpoint.
//
// Contract: counts allocated bytes (st_blocks * 512, what `du` reports and
// what fills a disk) of the directory and everything below it; never follows
// a symbolic link (a link counts as itself); never descends into another
// mount (a mount root below the directory, bind mounts included, is skipped
// entirely); counts a hard-linked file once. Entries that vanish during the
// walk (the worker is running) are skipped. Access times are not updated
// where O_NOATIME is allowed (root: always), so measuring does not make files
// look recently used to tmpfiles. The walk is tree_walk.h's, so its memory is
// bounded whatever the worker put there.
//
// Caps (UsageLimits), each making the figure a lower bound (TreeUsage::exact()
// false, the cap named in TreeUsage::capped) instead of failing, so that a
// tree too big to measure still counts against a quota with what was seen:
//  - entries: the walk stops after max_entries entries;
//  - depth: directories deeper than max_depth levels are not entered (one
//    descriptor is held per level);
//  - hard links: at most max_linked_inodes inodes with several links are
//    remembered to be counted once; each link of any other such inode counts
//    its share (blocks / links), which never counts more than the file holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/result.h"

namespace infervisor {

inline constexpr int kMaxUsageDepth = 256;
inline constexpr uint64_t kMaxUsageEntries = 2'000'000;
inline constexpr size_t kMaxLinkedInodes = 20'000;

struct UsageLimits {
    uint64_t max_entries = kMaxUsageEntries;
    int max_depth = kMaxUsageDepth;
    size_t max_linked_inodes = kMaxLinkedInodes;
};

struct TreeUsage {
    struct Caps {
        bool entries = false, depth = false, hard_links = false;
        bool any() const { return entries || depth || hard_links; }
    };

    uint64_t bytes = 0;
    uint64_t entries = 0;      // entries statted (the directory itself not included)
    size_t linked_inodes = 0;  // hard-linked inodes remembered, at most max_linked_inodes
    Caps capped;               // the caps that were reached

    bool exact() const { return !capped.any(); }
    // "more than 2000000 entries, deeper than 256 levels": the caps reached,
    // for a journal message; empty when exact.
    std::string capped_by(const UsageLimits& limits) const;
};

// `dir_fd` may be any descriptor of the directory (O_PATH too).
Result<TreeUsage> measure_usage(int dir_fd, const UsageLimits& limits = {});

}  // namespace infervisor
