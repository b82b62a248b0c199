// SteadyClock's timers: asio steady_timers on the daemon's event loop.
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "base/clock.h"
#include "base/timer.h"

namespace infervisor {

namespace {

// asio runs a handler whose time has come even when the timer is cancelled
// after it was queued (with a success code). The state shared with the
// queued handler makes cancel(), arm() and the destructor final: the
// handler runs only if it is still the one armed.
class SteadyTimer final : public Timer {
  public:
    explicit SteadyTimer(boost::asio::io_context& io) : timer_(io) {}
    ~SteadyTimer() override { cancel(); }

    void arm(TimePoint::duration after, Handler handler) override {
        arm_at(std::chrono::steady_clock::now() + after, std::move(handler));
    }

    void arm_at(TimePoint due, Handler handler) override {
        cancel();
        state_->armed = true;
        timer_.expires_at(due);
        timer_.async_wait([state = std::weak_ptr<State>(state_), generation = state_->generation,
                           handler = std::move(handler)](const boost::system::error_code& ec) {
            auto live = state.lock();
            if (ec || !live || live->generation != generation) return;
            live->armed = false;
            live.reset();  // the handler may destroy the timer
            handler();
        });
    }

    void cancel() override {
        ++state_->generation;
        state_->armed = false;
        timer_.cancel();
    }

    bool armed() const override { return state_->armed; }
    TimePoint due() const override { return timer_.expiry(); }

  private:
    struct State {
        uint64_t generation = 0;  // of the armed handler; bumped by cancel()
        bool armed = false;
    };
    boost::asio::steady_timer timer_;
    std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace

std::unique_ptr<Timer> SteadyClock::make_timer() const {
    return std::make_unique<SteadyTimer>(io_);
}

}  // namespace infervisor
