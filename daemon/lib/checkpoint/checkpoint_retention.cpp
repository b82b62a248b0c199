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
        plan.why = (newest.sequence == 0 ? std::string("the new checkpoint")
                                         : "checkpoint " + std::to_string(newest.sequence)) +
                   " takes " + human_size(newest.bytes) + ", more than the checkpoint quota of " +
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

std::vector<SweepRetirement> plan_sweep(const std::vector<MeasuredCheckpoint>& all,
                                        const RetentionLimits& limits) {
    uint64_t total = 0;
    uint64_t count = 0;
    size_t kept_from = 0;   // all[kept_from..] stay
    std::string why_older;  // why the first one that went did
    for (size_t i = all.size(); i-- > 0;) {
        const auto& c = all[i];
        bool too_old = limits.max_age > Duration::zero() && c.age && *c.age > limits.max_age;
        bool too_big = total + c.bytes > limits.quota_bytes || total + c.bytes < total;
        bool too_many = count >= limits.keep;
        if (too_old || too_big || too_many) {
            why_older = too_old ? "max_age" : too_big ? "quota" : "keep";
            kept_from = i + 1;
            break;
        }
        total += c.bytes;
        ++count;
    }
    std::vector<SweepRetirement> out;
    for (size_t i = 0; i < kept_from; ++i) {
        const auto& c = all[i];
        bool too_old = limits.max_age > Duration::zero() && c.age && *c.age > limits.max_age;
        out.push_back({c.sequence, too_old ? std::string("max_age") : why_older});
    }
    return out;
}

}  // namespace infervisor
