// Timer: a one-shot wake-up after a while, made by a Clock (clock.h) so that
// whatever runs on a clock's time also waits on it: the daemon's timers are
// asio timers on its event loop (SteadyClock), a test's fire when the test
// moves its FakeClock (tests/unit/support/fake_clock.h).
//
// Contract: arm() replaces whatever was armed (the earlier handler never
// runs); cancel() guarantees that the armed handler does not run, also when
// its time has come and it only waits for its turn on the loop; destroying
// the Timer cancels it. A handler runs at most once, on the thread that
// drives the clock (the event loop), and may arm, cancel or destroy this or
// any other timer, its owner included.
#pragma once

#include <functional>

#include "base/clock.h"

namespace infervisor {

class Timer {
  public:
    using Handler = std::function<void()>;

    virtual ~Timer() = default;
    // Runs `handler` once `after` has passed (at once, on the loop, if it is
    // not positive).
    virtual void arm(TimePoint::duration after, Handler handler) = 0;
    // Runs `handler` at `due` (soon, if it has passed).
    virtual void arm_at(TimePoint due, Handler handler) = 0;
    virtual void cancel() = 0;
    // Armed and not yet fired or cancelled.
    virtual bool armed() const = 0;
    // When the last arm() was due (also after it fired).
    virtual TimePoint due() const = 0;
};

}  // namespace infervisor
