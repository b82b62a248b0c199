#include "metrics/worker_history.h"

#include <algorithm>
#include <cmath>

namespace infervisor {

namespace {

HistoryPoint point_of(const TraceRound& round, const TraceWorker& w) {
    const WorkerSample& s = w.sample;
    HistoryPoint p;
    p.time_ms = round.wall_ms;
    p.memory_kib = to_kib(s.memory_current);
    p.memory_max_kib = to_kib(s.memory_max);
    p.memory_high_kib = to_kib(s.memory_high);
    p.swap_kib = to_kib(s.swap_current);
    if (s.memory_pressure) {
        p.memory_some_avg10 = to_centi_percent(s.memory_pressure->some.avg10);
        if (s.memory_pressure->full)
            p.memory_full_avg10 = to_centi_percent(s.memory_pressure->full->avg10);
    }
    if (w.growth_percent_per_min && std::isfinite(*w.growth_percent_per_min)) {
        p.growth_known = true;
        p.growth_pct_per_min = static_cast<float>(*w.growth_percent_per_min);
    }
    return p;
}

// Pages a second read back from swap since `before`, a sample of the same
// run; -1 when that cannot be told.
float swap_in_rate(const WorkerSample& before, TimePoint before_time, const WorkerSample& now,
                   TimePoint now_time) {
    if (!before.swapin_pages || !now.swapin_pages || *now.swapin_pages < *before.swapin_pages ||
        now_time <= before_time || now.started_at != before.started_at)
        return -1;
    double secs = std::chrono::duration<double>(now_time - before_time).count();
    return static_cast<float>(static_cast<double>(*now.swapin_pages - *before.swapin_pages) / secs);
}

uint64_t median_tick_usec(const std::vector<TraceEntry>& trace) {
    std::vector<int64_t> gaps;
    std::optional<TimePoint> last;
    for (const auto& entry : trace) {
        const auto* round = std::get_if<TraceRound>(&entry);
        if (!round || round->woken) continue;
        if (last && round->time > *last)
            gaps.push_back(
                std::chrono::duration_cast<std::chrono::microseconds>(round->time - *last).count());
        last = round->time;
    }
    if (gaps.empty()) return 0;
    auto mid = gaps.begin() + static_cast<long>(gaps.size() / 2);
    std::nth_element(gaps.begin(), mid, gaps.end());
    return static_cast<uint64_t>(*mid);
}

}  // namespace

WorkerHistory history_from_trace(const std::vector<TraceEntry>& trace, std::string_view worker,
                                 size_t limit) {
    WorkerHistory h;
    h.interval_usec = median_tick_usec(trace);
    // The actions as journaled (every policy-action, whoever decided it);
    // a recording that has none of them (an older one) has the engine's
    // decisions at least.
    bool journaled = std::any_of(trace.begin(), trace.end(), [](const TraceEntry& entry) {
        const auto* event = std::get_if<TraceEvent>(&entry);
        return event && event->kind == TraceEventKind::action;
    });
    const TraceEventKind marked = journaled ? TraceEventKind::action : TraceEventKind::decision;
    const TraceWorker* previous = nullptr;
    TimePoint previous_time{};
    std::vector<HistoryAction> actions;
    for (const auto& entry : trace) {
        if (const auto* event = std::get_if<TraceEvent>(&entry)) {
            if (event->kind == marked && event->worker == worker)
                actions.push_back({event->wall_ms, event->rule, event->action, event->dry_run});
            continue;
        }
        const auto& round = std::get<TraceRound>(entry);
        for (const TraceWorker& w : round.workers) {
            if (w.name != worker) continue;
            HistoryPoint p = point_of(round, w);
            if (previous)
                p.swap_in_pages_per_s =
                    swap_in_rate(previous->sample, previous_time, w.sample, round.time);
            h.points.push_back(p);
            previous = &w;
            previous_time = round.time;
        }
    }
    if (h.points.size() > limit)
        h.points.erase(h.points.begin(), h.points.end() - static_cast<long>(limit));
    const int64_t since = h.points.empty() ? 0 : h.points.front().time_ms;
    for (auto& a : actions)
        if (a.time_ms >= since) h.actions.push_back(std::move(a));
    return h;
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
