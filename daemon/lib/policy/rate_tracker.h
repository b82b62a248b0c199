// Rates computed from series of samples, for the policy's derived metrics.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>

#include "base/clock.h"
#include "policy/samples.h"

namespace infervisor {

// Growth of a level (memory.current) over a sliding window.
//
// Contract: the growth is (newest - anchor) / (newest.time - anchor.time),
// where the anchor is the latest sample taken at or before newest.time -
// window (or the oldest one kept, early on). A one-off jump therefore counts
// for one window and is then forgotten, while a steady leak shows at its true
// slope. Until the samples span half the window there is no answer: two
// samples a second apart say little about a trend.
class GrowthTracker {
  public:
    explicit GrowthTracker(Duration window) : window_(window) {}

    // Samples must come in time order; an older or equal time replaces nothing
    // and is ignored.
    void add(TimePoint time, double value);

    // Change per minute, in the value's unit; empty until enough history.
    std::optional<double> per_minute() const;

    Duration window() const { return window_; }
    // A new window applies from the next add(); the samples kept so far stay.
    void set_window(Duration window) { window_ = window; }
    void clear() { samples_.clear(); }

  private:
    struct Point {
        TimePoint time;
        double value;
    };
    Duration window_;
    std::deque<Point> samples_;
};

// Per-second rate of a cumulative counter (/proc/vmstat pswpin, cpu.stat
// usage_usec).
//
// Contract: the rate is measured between the last two samples at least
// `min_interval` apart, so a burst of closely spaced samples (PSI wake-ups)
// does not produce 0/s readings over a few milliseconds; samples closer than
// that keep the previous rate. A counter that goes backwards was reset (the
// cgroup was recreated): the rate is empty until the next interval.
class CounterRate {
  public:
    explicit CounterRate(Duration min_interval = Duration(1000)) : min_interval_(min_interval) {}

    void add(TimePoint time, uint64_t counter);
    std::optional<double> per_second() const { return rate_; }
    void clear();

  private:
    Duration min_interval_;
    std::optional<TimePoint> anchor_time_;
    uint64_t anchor_value_ = 0;
    std::optional<double> rate_;
};

// engine.rate(NAME): the per-second increase of each series of a worker's
// engine readings (policy/samples.h), between the last two readings.
//
// Contract: a reading is taken once, by its time: a sample that carries the
// same reading again (or an older one) keeps the rates; a later one replaces them, each series
// compared with the reading before it. A sample without a reading (a failed
// or late scrape) has no rates, and the next reading is compared with the
// last one there was. A series that went down (the server restarted its
// counters) or is not a finite number, or that the reading before did not
// show, has no rate in that reading.
class SeriesRates {
  public:
    void add(const std::optional<EngineReading>& reading);
    // Null when the last sample had no reading.
    const EngineSeries* rates() const { return current_ ? &rates_ : nullptr; }
    void clear();

  private:
    std::optional<EngineReading> last_;
    EngineSeries rates_;
    bool current_ = false;
};

}  // namespace infervisor
