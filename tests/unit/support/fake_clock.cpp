#include "support/fake_clock.h"

#include <algorithm>
#include <tuple>
#include <utility>
#include <vector>

namespace infervisor {

class FakeTimer;

struct FakeClock::Schedule {
    TimePoint now{std::chrono::hours(1000)};
    uint64_t armings = 0;            // orders timers due at the same time
    std::vector<FakeTimer*> timers;  // every live timer, armed or not

    FakeTimer* next() const;
};

// A timer of a FakeClock: due at due_, armed while it has a handler.
class FakeTimer final : public Timer {
  public:
    explicit FakeTimer(std::shared_ptr<FakeClock::Schedule> schedule)
        : schedule_(std::move(schedule)) {
        schedule_->timers.push_back(this);
    }
    ~FakeTimer() override {
        auto& timers = schedule_->timers;
        timers.erase(std::find(timers.begin(), timers.end(), this));
    }

    void arm(TimePoint::duration after, Handler handler) override {
        arm_at(schedule_->now + after, std::move(handler));
    }
    void arm_at(TimePoint due, Handler handler) override {
        due_ = due;
        order_ = ++schedule_->armings;
        handler_ = std::move(handler);
    }
    void cancel() override { handler_ = nullptr; }
    bool armed() const override { return handler_ != nullptr; }
    TimePoint due() const override { return due_; }

    bool before(const FakeTimer& other) const {
        return std::tie(due_, order_) < std::tie(other.due_, other.order_);
    }
    // Disarms, then runs the handler (which may destroy this timer).
    void fire() {
        schedule_->now = std::max(schedule_->now, due_);
        Handler handler = std::exchange(handler_, nullptr);
        handler();
    }

  private:
    std::shared_ptr<FakeClock::Schedule> schedule_;
    TimePoint due_{};
    uint64_t order_ = 0;
    Handler handler_;
};

FakeTimer* FakeClock::Schedule::next() const {
    FakeTimer* first = nullptr;
    for (FakeTimer* t : timers)
        if (t->armed() && (!first || t->before(*first))) first = t;
    return first;
}

FakeClock::FakeClock() : schedule_(std::make_shared<Schedule>()) {}

TimePoint FakeClock::now() const { return schedule_->now; }

std::unique_ptr<Timer> FakeClock::make_timer() const {
    return std::make_unique<FakeTimer>(schedule_);
}

void FakeClock::advance(TimePoint::duration d) { advance_to(schedule_->now + d); }

void FakeClock::advance_to(TimePoint t) {
    // Looked up afresh after every handler: it may have armed, cancelled or
    // destroyed timers.
    while (FakeTimer* next = schedule_->next()) {
        if (next->due() > t) break;
        next->fire();
    }
    schedule_->now = std::max(schedule_->now, t);
}

bool FakeClock::fire_next() {
    FakeTimer* next = schedule_->next();
    if (!next) return false;
    next->fire();
    return true;
}

std::optional<TimePoint> FakeClock::next_due() const {
    if (FakeTimer* next = schedule_->next()) return next->due();
    return std::nullopt;
}

size_t FakeClock::armed_timers() const {
    return std::count_if(schedule_->timers.begin(), schedule_->timers.end(),
                         [](const FakeTimer* t) { return t->armed(); });
}

}  // namespace infervisor
