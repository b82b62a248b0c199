#include "policy/worker_phase.h"

#include <algorithm>

namespace infervisor {

std::string_view phase_name(WorkerPhase phase) {
    return phase == WorkerPhase::serving ? "serving" : "loading";
}

WorkerPhase PhaseTracker::observe(const WorkerSample& s) {
    if (phase_ == WorkerPhase::serving) return phase_;
    if (s.signals_readiness) {
        if (s.ready_at && *s.ready_at <= s.time) serve(*s.ready_at, "ready", s);
        return phase_;
    }
    if (settled(s)) {
        serve(s.time, "memory settled", s);
    } else if (s.started_at && s.load_limit && *s.load_limit > Duration::zero() &&
               s.time - *s.started_at >= *s.load_limit) {
        serve(s.time, "load limit", s);
    }
    return phase_;
}

bool PhaseTracker::settled(const WorkerSample& s) {
    if (!s.memory_current) return false;
    if (!recent_.empty() && s.time <= recent_.back().time) return false;
    recent_.push_back({s.time, *s.memory_current});
    // Keep exactly one sample at or before the span's start, as its anchor.
    TimePoint span_start = s.time - options_.settle;
    while (recent_.size() > 2 && recent_[1].time <= span_start) recent_.pop_front();
    if (recent_.front().time > span_start) return false;  // the span is not covered yet
    uint64_t reference = s.memory_max ? *s.memory_max : *s.memory_current;
    auto band = std::max<uint64_t>(options_.band_min_bytes,
                                   static_cast<uint64_t>(reference * options_.band_percent / 100));
    uint64_t anchor = recent_.front().value;
    return std::all_of(recent_.begin(), recent_.end(),
                       [&](const Point& p) { return p.value < anchor + band; });
}

void PhaseTracker::serve(TimePoint since, std::string why, const WorkerSample& sample) {
    phase_ = WorkerPhase::serving;
    baseline_ = sample.memory_current;
    serving_since_ = since;
    why_ = std::move(why);
    recent_.clear();
}

}  // namespace infervisor
