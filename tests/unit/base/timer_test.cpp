// Timers of both clocks: the FakeClock's fire in due order as the test moves
// time; the SteadyClock's run on the loop, and a cancel is final even when
// the handler's time has come and it is queued on the loop.
#include "base/timer.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <string>
#include <vector>

#include "support/fake_clock.h"

namespace infervisor {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(FakeClockTimer, FiresInDueOrderTiesInArmingOrderEachAtItsTime) {
    FakeClock clock;
    const TimePoint start = clock.now();
    std::vector<std::pair<std::string, TimePoint>> fired;
    auto late = clock.make_timer(), early = clock.make_timer(), tie = clock.make_timer();
    late->arm(seconds(3), [&] { fired.push_back({"late", clock.now()}); });
    early->arm(seconds(1), [&] { fired.push_back({"early", clock.now()}); });
    tie->arm(seconds(3), [&] { fired.push_back({"tie", clock.now()}); });
    EXPECT_EQ(clock.armed_timers(), 3u);
    clock.advance(milliseconds(999));
    EXPECT_TRUE(fired.empty());
    clock.advance(seconds(5));
    ASSERT_EQ(fired.size(), 3u);
    EXPECT_EQ(fired[0], std::make_pair(std::string("early"), start + seconds(1)));
    EXPECT_EQ(fired[1], std::make_pair(std::string("late"), start + seconds(3)));
    EXPECT_EQ(fired[2], std::make_pair(std::string("tie"), start + seconds(3)));
    EXPECT_EQ(clock.now(), start + milliseconds(5999));
    EXPECT_EQ(clock.armed_timers(), 0u);
    EXPECT_FALSE(late->armed());
}

TEST(FakeClockTimer, CancelIsFinalAndArmReplaces) {
    FakeClock clock;
    std::vector<std::string> fired;
    auto a = clock.make_timer(), b = clock.make_timer();
    a->arm(seconds(1), [&] { fired.push_back("a first"); });
    a->arm(seconds(2), [&] { fired.push_back("a again"); });
    b->arm(seconds(1), [&] { fired.push_back("b"); });
    b->cancel();
    EXPECT_FALSE(b->armed());
    clock.advance(seconds(10));
    EXPECT_EQ(fired, std::vector<std::string>{"a again"});
}

TEST(FakeClockTimer, AZeroWaitFiresAtTheNextAdvanceEvenOfZero) {
    FakeClock clock;
    int fired = 0;
    auto t = clock.make_timer();
    t->arm(Duration::zero(), [&] { ++fired; });
    EXPECT_EQ(fired, 0);  // never inside arm()
    clock.advance(Duration::zero());
    EXPECT_EQ(fired, 1);
}

TEST(FakeClockTimer, AHandlerMayArmCancelAndDestroyTimersItsOwnIncluded) {
    FakeClock clock;
    const TimePoint start = clock.now();
    std::vector<std::pair<std::string, TimePoint>> fired;
    auto periodic = clock.make_timer();
    auto doomed = clock.make_timer(), cancelled = clock.make_timer();
    std::function<void()> tick = [&] {
        fired.push_back({"tick", clock.now()});
        periodic->arm(seconds(1), tick);  // re-armed from its own handler
    };
    periodic->arm(seconds(1), tick);
    cancelled->arm(milliseconds(2500), [&] { fired.push_back({"cancelled", clock.now()}); });
    doomed->arm(milliseconds(1500), [&] {
        fired.push_back({"doomed", clock.now()});
        cancelled->cancel();
        doomed.reset();  // destroys the timer whose handler this is
    });
    clock.advance(milliseconds(3200));
    ASSERT_EQ(fired.size(), 4u);
    EXPECT_EQ(fired[0], std::make_pair(std::string("tick"), start + seconds(1)));
    EXPECT_EQ(fired[1], std::make_pair(std::string("doomed"), start + milliseconds(1500)));
    EXPECT_EQ(fired[2], std::make_pair(std::string("tick"), start + seconds(2)));
    EXPECT_EQ(fired[3], std::make_pair(std::string("tick"), start + seconds(3)));
    EXPECT_EQ(doomed, nullptr);
    EXPECT_EQ(clock.next_due(), start + seconds(4));
}

TEST(FakeClockTimer, AHandlerThatDestroysAnArmedTimerKeepsItFromFiring) {
    FakeClock clock;
    std::vector<std::string> fired;
    auto first = clock.make_timer();
    auto second = clock.make_timer();
    second->arm(seconds(1), [&] { fired.push_back("second"); });
    first->arm(seconds(1), [&] {  // armed later: fires after `second` would, tie
        fired.push_back("first");
    });
    auto killer = clock.make_timer();
    killer->arm(milliseconds(500), [&] {
        fired.push_back("killer");
        second.reset();
    });
    clock.advance(seconds(2));
    EXPECT_EQ(fired, (std::vector<std::string>{"killer", "first"}));
}

TEST(FakeClockTimer, FireNextMovesTimeToTheNextTimer) {
    FakeClock clock;
    const TimePoint start = clock.now();
    int fired = 0;
    auto t = clock.make_timer();
    EXPECT_FALSE(clock.fire_next());
    t->arm_at(start + seconds(7), [&] { ++fired; });
    EXPECT_EQ(t->due(), start + seconds(7));
    EXPECT_TRUE(clock.fire_next());
    EXPECT_EQ(fired, 1);
    EXPECT_EQ(clock.now(), start + seconds(7));
    EXPECT_FALSE(clock.next_due());
}

TEST(FakeClockTimer, ATimerMayOutliveItsClock) {
    std::unique_ptr<Timer> t;
    {
        FakeClock clock;
        t = clock.make_timer();
        t->arm(seconds(1), [] {});
    }
    t->cancel();
    EXPECT_FALSE(t->armed());
}

TEST(SteadyClockTimer, RunsOnTheLoopNotInsideArm) {
    boost::asio::io_context io;
    SteadyClock clock(io);
    int fired = 0;
    auto t = clock.make_timer();
    t->arm(Duration::zero(), [&] { ++fired; });
    EXPECT_TRUE(t->armed());
    EXPECT_EQ(fired, 0);
    io.run();
    EXPECT_EQ(fired, 1);
    EXPECT_FALSE(t->armed());
}

// Both are due when the loop runs, so asio queues both handlers at once; the
// first then cancels the second and destroys a third. Plain asio would still
// run the second (with a success code); a Timer does not.
TEST(SteadyClockTimer, ACancelAfterItsTimeHasComeIsStillFinal) {
    boost::asio::io_context io;
    SteadyClock clock(io);
    std::vector<std::string> fired;
    auto past = clock.now() - seconds(1);
    auto first = clock.make_timer(), second = clock.make_timer(), third = clock.make_timer();
    first->arm_at(past, [&] {
        fired.push_back("first");
        second->cancel();
        third.reset();
    });
    second->arm_at(past, [&] { fired.push_back("second"); });
    third->arm_at(past, [&] { fired.push_back("third"); });
    io.run();
    EXPECT_EQ(fired, std::vector<std::string>{"first"});
}

TEST(SteadyClockTimer, AReArmFromItsHandlerAndAReplacedHandler) {
    boost::asio::io_context io;
    SteadyClock clock(io);
    std::vector<std::string> fired;
    auto t = clock.make_timer();
    t->arm(seconds(3600), [&] { fired.push_back("replaced"); });
    int ticks = 0;
    std::function<void()> tick = [&] {
        fired.push_back("tick");
        if (++ticks < 3) t->arm(milliseconds(1), tick);
    };
    t->arm(milliseconds(1), tick);
    io.run();  // returns: the replaced wait is gone, not pending for an hour
    EXPECT_EQ(fired, (std::vector<std::string>{"tick", "tick", "tick"}));
}

TEST(SteadyClockTimer, DestroyedWhileArmedItsHandlerNeverRuns) {
    boost::asio::io_context io;
    SteadyClock clock(io);
    int fired = 0;
    auto t = clock.make_timer();
    t->arm(Duration::zero(), [&] { ++fired; });
    t.reset();
    io.run();
    EXPECT_EQ(fired, 0);
}

}  // namespace
}  // namespace infervisor
