// Clock: the seam through which all time enters decision logic, so that
// policies and restart state machines are tested with a FakeClock.
#pragma once

#include <chrono>

namespace infervisor {

using Duration = std::chrono::milliseconds;
using TimePoint = std::chrono::steady_clock::time_point;

class Clock {
  public:
    virtual ~Clock() = default;
    virtual TimePoint now() const = 0;
};

class SteadyClock final : public Clock {
  public:
    TimePoint now() const override { return std::chrono::steady_clock::now(); }
};

// A clock that moves only when told to; for tests.
class FakeClock final : public Clock {
  public:
    TimePoint now() const override { return now_; }
    void advance(Duration d) { now_ += d; }

  private:
    TimePoint now_{std::chrono::hours(1000)};
};

}  // namespace infervisor
