#include "checkpoint/checkpoint_retention.h"

#include "base/units.h"

namespace infervisor {

uint64_t quota_bytes(const CheckpointQuota& quota, uint64_t fs_bytes) {
    if (quota.percent == 0) return quota.bytes;
    // fs_bytes / 100 first: no overflow for any file system size.
    return fs_bytes / 100 * static_cast<uint64_t>(quota.percent) +
           fs_bytes % 100 * static_cast<uint64_t>(quota.percent) / 100;
}

RetentionPlan plan_retention(const std::vector<MeasuredCheckpoint>& older,
                             const MeasuredCheckpoint& newest, const RetentionLimits& limits) {
    RetentionPlan plan;
    if (newest.bytes > limits.quota_bytes) {
        plan.refused = true;
        plan.why = "checkpoint " + std::to_string(newest.sequence) + " takes " +
                   human_size(newest.bytes) + ", more than the checkpoint quota of " +
                   human_size(limits.quota_bytes);
        for (const auto& c : older) plan.kept_bytes += c.bytes;
        return plan;
    }
    // From the newest older one back: they stay in a row while each is within
    // `keep`, `max_age` and the quota; the first that is not ends the row.
    uint64_t total = newest.bytes;
    uint64_t count = 1;
    std::vector<bool> stays(older.size(), false);
    for (size_t i = older.size(); i-- > 0;) {
        const auto& c = older[i];
        bool too_many = count >= limits.keep;
        bool too_old = limits.max_age > Duration::zero() && c.age && *c.age > limits.max_age;
        bool too_big = total + c.bytes > limits.quota_bytes || total + c.bytes < total;
        if (too_many || too_old || too_big) break;
        stays[i] = true;
        total += c.bytes;
        ++count;
    }
    for (size_t i = 0; i < older.size(); ++i)
        if (!stays[i]) plan.retire.push_back(older[i].sequence);
    plan.kept_bytes = total;
    return plan;
}

}  // namespace infervisor
