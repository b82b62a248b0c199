#include "policy/rate_tracker.h"

#include <cmath>

namespace infervisor {

namespace {
double minutes(std::chrono::steady_clock::duration d) {
    return std::chrono::duration<double, std::ratio<60>>(d).count();
}
double seconds(std::chrono::steady_clock::duration d) {
    return std::chrono::duration<double>(d).count();
}
}  // namespace

void GrowthTracker::add(TimePoint time, double value) {
    if (!samples_.empty() && time <= samples_.back().time) return;
    samples_.push_back({time, value});
    // Keep exactly one sample at or before the window's start, as the anchor.
    while (samples_.size() > 2 && samples_[1].time <= time - window_) samples_.pop_front();
}

std::optional<double> GrowthTracker::per_minute() const {
    if (samples_.size() < 2) return std::nullopt;
    const Point& anchor = samples_.front();
    const Point& newest = samples_.back();
    auto span = newest.time - anchor.time;
    if (span < window_ / 2) return std::nullopt;
    return (newest.value - anchor.value) / minutes(span);
}

void CounterRate::add(TimePoint time, uint64_t counter) {
    if (!anchor_time_ || counter < anchor_value_) {
        anchor_time_ = time;
        anchor_value_ = counter;
        rate_.reset();
        return;
    }
    auto span = time - *anchor_time_;
    if (span <= std::chrono::steady_clock::duration::zero() || span < min_interval_) return;
    rate_ = static_cast<double>(counter - anchor_value_) / seconds(span);
    anchor_time_ = time;
    anchor_value_ = counter;
}

void CounterRate::clear() {
    anchor_time_.reset();
    rate_.reset();
}

void SeriesRates::add(const std::optional<EngineReading>& reading) {
    current_ = reading.has_value();
    if (!reading || (last_ && reading->time <= last_->time)) return;
    rates_.clear();
    if (last_) {
        const double span = seconds(reading->time - last_->time);
        for (const auto& [name, value] : reading->series) {
            auto before = last_->series.find(name);
            if (before == last_->series.end() || !std::isfinite(value) ||
                !std::isfinite(before->second) || value < before->second)
                continue;
            rates_.emplace(name, (value - before->second) / span);
        }
    }
    last_ = reading;
}

void SeriesRates::clear() {
    last_.reset();
    rates_.clear();
    current_ = false;
}

}  // namespace infervisor
