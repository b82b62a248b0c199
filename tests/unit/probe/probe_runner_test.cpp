// ProbeRunner with a scripted attempt starter on a fake clock: the order of
// verdict changes, one attempt at a time, and stop() as a hard end. The
// tracker's own timing rules are tested in probe_tracker_test.cpp.
#include "probe/probe_runner.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <deque>

#include "support/fake_clock.h"

namespace infervisor {
namespace {

namespace asio = boost::asio;

class FakeAttempt final : public ProbeAttempt {
  public:
    void cancel() override { cancelled = true; }
    bool cancelled = false;
};

class ProbeRunnerTest : public ::testing::Test {
  protected:
    ProbeSpec spec(int64_t failures) {
        ProbeSpec s;
        s.port = 80;
        s.interval = std::chrono::milliseconds(5);
        s.timeout = std::chrono::seconds(600);
        s.failure_threshold = failures;
        return s;
    }

    // Answers each attempt with the next scripted outcome; holds the attempt
    // unanswered once the script is empty.
    ProbeRunner::AttemptStarter scripted() {
        return [this](Duration, ProbeDone done) {
            ++started;
            auto attempt = std::make_shared<FakeAttempt>();
            attempts.push_back(attempt);
            if (script.empty()) {
                held = std::move(done);
                return attempt;
            }
            bool passed = script.front();
            script.pop_front();
            asio::post(io, [done = std::move(done), passed] {
                done(ProbeOutcome{passed, passed ? "HTTP 200" : "HTTP 503", std::nullopt});
            });
            return attempt;
        };
    }

    // Runs the answers posted so far; when there are none, moves the clock
    // to the next attempt. Stops when `condition` holds or nothing is left.
    void run_until(const std::function<bool()>& condition) {
        while (!condition()) {
            io.restart();
            if (io.poll() == 0 && !clock.fire_next()) break;
        }
        ASSERT_TRUE(condition());
    }
    // Lets `d` pass, answering what is answered meanwhile.
    void run_for(Duration d) {
        auto until = clock.now() + d;
        do {
            io.restart();
            io.poll();
        } while (clock.next_due() && *clock.next_due() <= until && clock.fire_next());
        clock.advance_to(until);
    }

    asio::io_context io;
    FakeClock clock;
    std::deque<bool> script;
    int started = 0;
    ProbeDone held;
    std::vector<std::shared_ptr<FakeAttempt>> attempts;
    std::vector<ProbeChange> changes;
};

TEST_F(ProbeRunnerTest, ReportsEachChangeInOrder) {
    script = {false, false, true, false, false, false, true};
    ProbeRunner runner(clock, spec(3), scripted(),
                       [&](const ProbeChange& c) { changes.push_back(c); });
    runner.start();
    run_until([&] { return held != nullptr; });
    ASSERT_EQ(changes.size(), 3u);
    EXPECT_EQ(changes[0].from, ProbeVerdict::unknown);
    EXPECT_EQ(changes[0].to, ProbeVerdict::passing);
    EXPECT_EQ(changes[1].to, ProbeVerdict::failing);
    EXPECT_EQ(changes[1].streak, 3);
    EXPECT_EQ(changes[1].outcome.detail, "HTTP 503");
    EXPECT_EQ(changes[2].to, ProbeVerdict::passing);
    EXPECT_EQ(started, 8);  // seven answered, the eighth held
}

TEST_F(ProbeRunnerTest, NeverStartsASecondAttemptWhileOneIsUnanswered) {
    ProbeRunner runner(clock, spec(3), scripted(), nullptr);
    runner.start();
    run_until([&] { return started == 1; });
    run_for(std::chrono::milliseconds(100));  // twenty intervals
    EXPECT_EQ(started, 1);
    EXPECT_TRUE(runner.tracker().in_flight());
}

TEST_F(ProbeRunnerTest, StopCancelsTheAttemptAndSilencesItsAnswer) {
    ProbeRunner runner(clock, spec(1), scripted(),
                       [&](const ProbeChange& c) { changes.push_back(c); });
    runner.start();
    run_until([&] { return started == 1; });
    runner.stop();
    EXPECT_TRUE(attempts.at(0)->cancelled);
    held(ProbeOutcome{false, "late", std::nullopt});  // an answer after the stop
    run_for(std::chrono::milliseconds(50));
    EXPECT_TRUE(changes.empty());
    EXPECT_EQ(started, 1);
    EXPECT_FALSE(runner.running());
}

TEST_F(ProbeRunnerTest, ACallbackThatStopsTheRunnerEndsIt) {
    script = {false, false, false, false};
    ProbeRunner* self = nullptr;
    ProbeRunner runner(clock, spec(1), scripted(), [&](const ProbeChange& c) {
        changes.push_back(c);
        self->stop();
    });
    self = &runner;
    runner.start();
    run_until([&] { return !changes.empty(); });
    run_for(std::chrono::milliseconds(50));
    EXPECT_EQ(started, 1);
    EXPECT_EQ(changes.size(), 1u);
}

TEST_F(ProbeRunnerTest, StartAgainBeginsANewRunFromUnknown) {
    script = {false};
    ProbeRunner runner(clock, spec(1), scripted(),
                       [&](const ProbeChange& c) { changes.push_back(c); });
    runner.start();
    run_until([&] { return changes.size() == 1; });
    run_until([&] { return held != nullptr; });
    script = {true};
    runner.start();
    EXPECT_EQ(runner.tracker().verdict(), ProbeVerdict::unknown);
    run_until([&] { return changes.size() == 2; });
    EXPECT_EQ(changes[1].from, ProbeVerdict::unknown);
    EXPECT_EQ(changes[1].to, ProbeVerdict::passing);
}

}  // namespace
}  // namespace infervisor
