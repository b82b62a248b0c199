// Which of a worker's checkpoints stay once a new one is written: the one
// rule for `keep`, `max_age` and `quota` (issue 26 #9).
//
// The rule, in order:
//  1. A new checkpoint larger than the quota on its own is refused: it is
//     deleted, checkpoint-failed says why, and every older one is kept as it
//     was (the previous newest stays the one the next run restores).
//  2. Otherwise the new one is kept, and so are the older ones just before
//     it, newest first, while each is within the newest `keep` (the new one
//     counts), no older than `max_age` (when set), and fits in the quota with
//     all kept so far; the first that does not, and every one older than it,
//     is deleted. The newest complete checkpoint is therefore never deleted
//     to make room, and the quota holds after every checkpoint.
// A checkpoint that could not be measured counts as refused (a worker must
// not escape the quota with a tree too deep to measure).
//
// Between checkpoints a sweep applies the same limits to what is kept, on
// fresh measurements (plan_sweep): from the newest back, each stays while it
// is within `keep`, no older than `max_age` and fits in the quota with all
// kept so far; the first that does not, and every one older, is deleted.
// Here the newest is no exception: `max_age` is how long checkpoint data may
// be kept, and a newest one that is over the quota on its own (it grew after
// it was judged, or the quota was lowered) cannot be kept within it.
//
// Pure: sizes and ages come in, a decision goes out (supervise/ measures and
// moves to the trash).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "checkpoint/checkpoint_spec.h"

namespace infervisor {

struct MeasuredCheckpoint {
    uint64_t sequence = 0;
    uint64_t bytes = 0;
    // Since the daemon published it; empty when unknown (never deleted by age).
    std::optional<Duration> age;
};

struct RetentionLimits {
    uint64_t quota_bytes = 0;
    uint64_t keep = 1;
    Duration max_age = Duration::zero();  // zero: no age limit
};

struct RetentionPlan {
    bool refused = false;  // the new checkpoint is deleted, all older are kept
    std::string why;       // when refused, in words
    // Older checkpoints to delete, oldest first (empty when refused).
    std::vector<uint64_t> retire;
    uint64_t kept_bytes = 0;  // what stays, the new one included
};

struct SweepRetirement {
    uint64_t sequence = 0;
    std::string reason;  // "max_age", "quota" or "keep"
};

// The quota in bytes for a file system of `fs_bytes`.
uint64_t quota_bytes(const CheckpointQuota& quota, uint64_t fs_bytes);

// `older`: the complete checkpoints before `newest`, oldest first;
// `newest.sequence` is 0 while it is judged before it is published.
RetentionPlan plan_retention(const std::vector<MeasuredCheckpoint>& older,
                             const MeasuredCheckpoint& newest, const RetentionLimits& limits);

// `all`: every complete checkpoint, oldest first; one that could not be
// measured has bytes UINT64_MAX (so it never fits). Returns those to delete,
// oldest first.
std::vector<SweepRetirement> plan_sweep(const std::vector<MeasuredCheckpoint>& all,
                                        const RetentionLimits& limits);

}  // namespace infervisor
