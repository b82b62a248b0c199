// HistoryRing: the last N samples of one worker, for `infervisorctl history`
// without Prometheus. Fixed memory: the capacity is set once (history /
// sample_interval, at most kMaxPoints) and each point is a compact
// HistoryPoint of 40 bytes, so one worker costs at most capacity x 40 bytes
// (1800 points = 1 h at the default 2 s: 70 KiB) plus its last kMaxActions
// policy actions. The oldest point is overwritten first.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace infervisor {

// One sample. Sizes in KiB (32 bits: up to 4 TiB); a field the sample lacked
// is kNone. Percentages in hundredths of a percent (0-10000).
struct HistoryPoint {
    static constexpr uint32_t kNone = UINT32_MAX;
    static constexpr uint16_t kNoPercent = UINT16_MAX;

    int64_t time_ms = 0;  // CLOCK_REALTIME, milliseconds since the epoch
    uint32_t memory_kib = kNone;
    uint32_t memory_max_kib = kNone;  // kNone: no limit
    uint32_t memory_high_kib = kNone;
    uint32_t swap_kib = kNone;
    float swap_in_pages_per_s = -1;  // -1: unknown (first sample of a run)
    float growth_pct_per_min = 0;
    bool growth_known = false;
    uint16_t memory_some_avg10 = kNoPercent;
    uint16_t memory_full_avg10 = kNoPercent;
};

// A policy action on the worker, shown as a mark on the chart.
struct HistoryAction {
    int64_t time_ms = 0;
    std::string rule;
    std::string action;  // log, throttle, freeze, checkpoint, kill
    bool dry_run = false;
};

class HistoryRing {
  public:
    static constexpr size_t kMaxPoints = 7200;
    static constexpr size_t kMaxActions = 64;

    explicit HistoryRing(size_t capacity);

    void add(const HistoryPoint& point);
    void add_action(HistoryAction action);
    // Oldest first.
    std::vector<HistoryPoint> points() const;
    const std::deque<HistoryAction>& actions() const { return actions_; }
    size_t capacity() const { return capacity_; }
    size_t size() const { return size_; }
    // Bytes reserved for the points: at most capacity x sizeof(HistoryPoint).
    size_t reserved_bytes() const { return slots_.capacity() * sizeof(HistoryPoint); }
    // Keeps the newest points that fit.
    void set_capacity(size_t capacity);

  private:
    size_t capacity_;
    size_t next_ = 0;  // where the next point goes
    size_t size_ = 0;
    std::vector<HistoryPoint> slots_;
    std::deque<HistoryAction> actions_;
};

// KiB from bytes, saturating below kNone; kNone for an empty value.
uint32_t to_kib(std::optional<uint64_t> bytes);
// Hundredths of a percent from a percentage, clamped to 0-100 %.
uint16_t to_centi_percent(std::optional<double> percent);

}  // namespace infervisor
