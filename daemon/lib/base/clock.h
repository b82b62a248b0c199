// Clock: the seam through which all time enters the daemon's logic, both
// reading it (now()) and waiting for it (make_timer(), timer.h), so that
// policies and the lifecycle's state machines are tested on a FakeClock
// (tests/unit/support/fake_clock.h) that moves, and fires its timers, only when a test says so.
#pragma once

#include <chrono>
#include <memory>

namespace boost::asio {
class io_context;
}

namespace infervisor {

using Duration = std::chrono::milliseconds;
using TimePoint = std::chrono::steady_clock::time_point;

class Timer;

class Clock {
  public:
    virtual ~Clock() = default;
    virtual TimePoint now() const = 0;
    // A new, unarmed timer on this clock's time.
    virtual std::unique_ptr<Timer> make_timer() const = 0;
};

// The real time: std::chrono::steady_clock, and timers that are asio
// steady_timers on `io`, whose handlers run on the loop that runs `io`.
class SteadyClock final : public Clock {
  public:
    explicit SteadyClock(boost::asio::io_context& io) : io_(io) {}
    TimePoint now() const override { return std::chrono::steady_clock::now(); }
    std::unique_ptr<Timer> make_timer() const override;

  private:
    boost::asio::io_context& io_;
};

}  // namespace infervisor
