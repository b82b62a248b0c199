// FakeClock: a clock for tests that moves only when the test says so, and
// fires its timers (timer.h) as it moves: synchronously, inside advance(),
// in the order they are due (timers due at the same time in the order they
// were armed), each seeing now() at its due time. A handler may arm, cancel
// or destroy any timer; one it arms that is due before the end of the
// advance fires in the same advance.
#pragma once

#include <optional>

#include "base/clock.h"
#include "base/timer.h"

namespace infervisor {

class FakeClock final : public Clock {
  public:
    FakeClock();
    FakeClock(const FakeClock&) = delete;
    FakeClock& operator=(const FakeClock&) = delete;

    TimePoint now() const override;
    std::unique_ptr<Timer> make_timer() const override;

    // Moves time forward by `d` (zero: fires what is already due).
    void advance(TimePoint::duration d);
    // Moves time to `t` (if it is later), firing what is due by then.
    void advance_to(TimePoint t);
    // Moves time to the next armed timer and fires it; false when none is armed.
    bool fire_next();
    // When the next armed timer is due.
    std::optional<TimePoint> next_due() const;
    size_t armed_timers() const;

    struct Schedule;  // the time and the timers, shared with them (fake_clock.cpp)

  private:
    std::shared_ptr<Schedule> schedule_;
};

}  // namespace infervisor
