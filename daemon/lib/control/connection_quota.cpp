#include "control/connection_quota.h"

#include <algorithm>
#include <utility>

namespace infervisor {

ConnectionQuota::Slot::Slot(Slot&& other) noexcept
    : quota_(std::exchange(other.quota_, nullptr)), uid_(other.uid_) {}

ConnectionQuota::Slot& ConnectionQuota::Slot::operator=(Slot&& other) noexcept {
    if (this != &other) {
        release();
        quota_ = std::exchange(other.quota_, nullptr);
        uid_ = other.uid_;
    }
    return *this;
}

ConnectionQuota::Slot::~Slot() { release(); }

void ConnectionQuota::Slot::release() {
    if (quota_) std::exchange(quota_, nullptr)->release(uid_);
}

ConnectionQuota::ConnectionQuota(ConnectionLimits limits) : limits_(limits) {
    limits_.root_reserve = std::min(limits_.root_reserve, limits_.max_connections);
}

std::variant<ConnectionQuota::Slot, ConnectionRefusal> ConnectionQuota::admit(uid_t uid) {
    if (uid != 0) {
        if (held_by(uid) >= limits_.max_per_uid)
            return ConnectionRefusal{"uid", limits_.max_per_uid};
        std::size_t unprivileged_limit = limits_.max_connections - limits_.root_reserve;
        if (unprivileged_ >= unprivileged_limit)
            return ConnectionRefusal{"total", unprivileged_limit};
    }
    if (total_ >= limits_.max_connections)
        return ConnectionRefusal{"total", limits_.max_connections};
    ++total_;
    if (uid != 0) ++unprivileged_;
    ++per_uid_[uid];
    return Slot(this, uid);
}

std::size_t ConnectionQuota::held_by(uid_t uid) const {
    auto it = per_uid_.find(uid);
    return it == per_uid_.end() ? 0 : it->second;
}

void ConnectionQuota::release(uid_t uid) {
    auto it = per_uid_.find(uid);
    if (it == per_uid_.end()) return;
    if (--it->second == 0) per_uid_.erase(it);
    --total_;
    if (uid != 0) --unprivileged_;
}

}  // namespace infervisor
