#include "metrics/history_ring.h"

#include <algorithm>
#include <cmath>

namespace infervisor {

static_assert(sizeof(HistoryPoint) <= 40, "HistoryRing's memory figure assumes 40-byte points");

HistoryRing::HistoryRing(size_t capacity)
    : capacity_(std::clamp<size_t>(capacity, 1, kMaxPoints)) {}

void HistoryRing::add(const HistoryPoint& point) {
    if (slots_.size() < capacity_) {
        // Grown by doubling up to exactly the capacity, not past it (the
        // daemon's memory is locked: every byte reserved is resident).
        if (slots_.size() == slots_.capacity())
            slots_.reserve(std::min(capacity_, std::max<size_t>(64, 2 * slots_.size())));
        slots_.push_back(point);
        next_ = slots_.size() % capacity_;
    } else {
        slots_[next_] = point;
        next_ = (next_ + 1) % capacity_;
    }
    size_ = slots_.size();
}

void HistoryRing::add_action(HistoryAction action) {
    if (actions_.size() == kMaxActions) actions_.pop_front();
    actions_.push_back(std::move(action));
}

std::vector<HistoryPoint> HistoryRing::points() const {
    std::vector<HistoryPoint> out;
    out.reserve(size_);
    if (size_ < capacity_) return slots_;
    for (size_t i = 0; i < size_; ++i) out.push_back(slots_[(next_ + i) % capacity_]);
    return out;
}

void HistoryRing::set_capacity(size_t capacity) {
    capacity = std::clamp<size_t>(capacity, 1, kMaxPoints);
    if (capacity == capacity_) return;
    std::vector<HistoryPoint> kept = points();
    if (kept.size() > capacity) kept.erase(kept.begin(), kept.end() - static_cast<long>(capacity));
    capacity_ = capacity;
    slots_ = std::move(kept);
    slots_.shrink_to_fit();
    size_ = slots_.size();
    next_ = size_ % capacity_;
}

uint32_t to_kib(std::optional<uint64_t> bytes) {
    if (!bytes) return HistoryPoint::kNone;
    return static_cast<uint32_t>(std::min<uint64_t>(*bytes / 1024, HistoryPoint::kNone - 1));
}

uint16_t to_centi_percent(std::optional<double> percent) {
    if (!percent || std::isnan(*percent)) return HistoryPoint::kNoPercent;
    return static_cast<uint16_t>(std::lround(std::clamp(*percent, 0.0, 100.0) * 100));
}

}  // namespace infervisor
