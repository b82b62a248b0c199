#include "workdir/quota_watch.h"

namespace infervisor {

bool QuotaWatch::update(uint64_t usage, std::optional<uint64_t> quota) {
    if (quota != quota_) {
        quota_ = quota;
        warned_ = false;
    }
    if (!quota_) return false;
    if (warned_) {
        double rearm_below = static_cast<double>(*quota_) * kQuotaRearmPercent / 100.0;
        if (static_cast<double>(usage) < rearm_below) warned_ = false;
        return false;
    }
    if (usage <= *quota_) return false;
    warned_ = true;
    return true;
}

}  // namespace infervisor
