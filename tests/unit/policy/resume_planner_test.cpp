// The resume decision on recorded traces: MemAvailable (and swap counters)
// sampled once a second by a FakeClock, workers waiting, and when which one
// comes back. Hysteresis: never into the pressure that preempted it; one at
// a time; highest priority first; only when it fits.
#include "policy/resume_planner.h"

#include <gtest/gtest.h>

#include <functional>

#include "support/byte_units.h"
#include "support/fake_clock.h"
#include "support/measurement.h"

namespace infervisor {
namespace {

using namespace std::chrono_literals;

Condition condition(const std::string& text) {
    auto c = parse_condition(text, RuleScope::host);
    EXPECT_TRUE(c.ok()) << c.error().what;
    return *c;
}

// One sample a second; `available(t)` shapes MemAvailable at t seconds.
class HostTrace {
  public:
    HostTrace(ResumePlanner& planner) : planner_(planner), start_(clock_.now()) {}

    FakeClock& clock() { return clock_; }
    long seconds() const {
        return std::chrono::duration_cast<std::chrono::seconds>(clock_.now() - start_).count();
    }

    std::optional<ResumeDecision> step(uint64_t available, uint64_t pswpin = 0) {
        HostSample s;
        s.time = clock_.now();
        s.mem_available = available;
        s.mem_total = 4 * GiB;
        s.pswpin = pswpin;
        s.pswpout = 0;
        auto d = planner_.evaluate(s, waiting, clock_.now());
        if (d) resumed.push_back({seconds(), d->worker});
        clock_.advance(1s);
        return d;
    }
    void run(long until_second, const std::function<uint64_t(long)>& available,
             const std::function<void(const ResumeDecision&)>& on_resume = {}) {
        while (seconds() < until_second) {
            auto d = step(available(seconds()));
            if (d && on_resume) on_resume(*d);
        }
    }
    void remove(const std::string& name) {
        std::erase_if(waiting, [&](const ResumeCandidate& c) { return c.name == name; });
    }

    std::vector<ResumeCandidate> waiting;
    std::vector<std::pair<long, std::string>> resumed;  // (second, worker)

  private:
    ResumePlanner& planner_;
    FakeClock clock_;
    TimePoint start_;
};

TEST(ResumePlanner, ResumesOnceTheConditionHasHeldForItsWholeFor) {
    ResumePlanner planner;
    planner.configure(condition("host.mem.available > 2G for 10s"), 30s);
    HostTrace t(planner);
    t.waiting = {{"low", 0, t.clock().now(), 512 * MiB, "suspended"}};
    // Short of room for 20 s, then room; once with a dip at 25 s.
    t.run(
        60, [](long s) { return s < 20 || s == 25 ? 1 * GiB : 3 * GiB; },
        [&](const ResumeDecision& d) { t.remove(d.worker); });
    ASSERT_EQ(t.resumed.size(), 1u);
    // Room from 26 s on, held 10 s at 36 s.
    EXPECT_EQ(t.resumed[0], (std::pair<long, std::string>{36, "low"}));
}

TEST(ResumePlanner, TheDecisionSaysWhyWithTheHostsNumbers) {
    ResumePlanner planner;
    planner.configure(condition("host.mem.available > 2G for 5s"), 30s);
    HostTrace t(planner);
    t.waiting = {{"low", 3, t.clock().now(), 512 * MiB, "suspended"}};
    std::optional<ResumeDecision> d;
    while (!d && t.seconds() < 60) d = t.step(3 * GiB);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->worker, "low");
    EXPECT_EQ(d->reason,
              "host.mem.available is 3.0G (> 2G) for 5s; resuming 'low' (priority 3, suspended "
              "for 5s, needs 512M)");
    EXPECT_EQ(measurement(*d, "HOST_MEM_AVAILABLE_BYTES"), std::to_string(3 * GiB));
    EXPECT_EQ(measurement(*d, "THRESHOLD"), "> 2G");
    EXPECT_EQ(measurement(*d, "HELD_SECONDS"), "5.000");
    EXPECT_EQ(measurement(*d, "PRIORITY"), "3");
    EXPECT_EQ(measurement(*d, "NEEDS_BYTES"), std::to_string(512 * MiB));
    EXPECT_EQ(measurement(*d, "WAITED_MS"), "5000");
    EXPECT_EQ(measurement(*d, "WAITING_WORKERS"), "1");
}

TEST(ResumePlanner, NeverIntoThePressureThatPreemptedIt) {
    ResumePlanner planner;
    planner.configure(condition("host.mem.available > 2G for 10s"), 0s);
    HostTrace t(planner);
    // Plenty of room for a while, nobody waiting; at 20 s a host rule
    // preempts 'low' (the room measured before does not count for it).
    t.run(20, [](long) { return 3 * GiB; });
    planner.preempted(t.clock().now());
    t.waiting = {{"low", 0, t.clock().now(), 512 * MiB, "suspended"}};
    t.run(
        60, [](long) { return 3 * GiB; }, [&](const ResumeDecision& d) { t.remove(d.worker); });
    ASSERT_EQ(t.resumed.size(), 1u);
    EXPECT_EQ(t.resumed[0].first, 30);  // the full `for` after the preemption
}

TEST(ResumePlanner, APreemptionWhileWaitingStartsTheForAgain) {
    ResumePlanner planner;
    planner.configure(condition("host.mem.available > 2G for 10s"), 0s);
    HostTrace t(planner);
    t.waiting = {{"low", 0, t.clock().now(), 512 * MiB, "suspended"}};
    t.run(8, [](long) { return 3 * GiB; });
    planner.preempted(t.clock().now());  // at 8 s: another worker is put aside
    t.run(
        40, [](long) { return 3 * GiB; }, [&](const ResumeDecision& d) { t.remove(d.worker); });
    ASSERT_EQ(t.resumed.size(), 1u);
    EXPECT_EQ(t.resumed[0].first, 18);
}

TEST(ResumePlanner, OneAtATimeHighestPriorityFirstEachAfterTheSettleAndTheFor) {
    ResumePlanner planner;
    planner.configure(condition("host.mem.available > 1G for 5s"), 20s);
    HostTrace t(planner);
    TimePoint now = t.clock().now();
    t.waiting = {{"batch", 0, now, 256 * MiB, "suspended"},
                 {"chat", 10, now + 1s, 256 * MiB, "parked"},
                 {"embed", 0, now - 5s, 256 * MiB, "suspended"}};
    t.run(
        120, [](long) { return 3 * GiB; }, [&](const ResumeDecision& d) { t.remove(d.worker); });
    ASSERT_EQ(t.resumed.size(), 3u);
    // Priority 10 first; then of the two at 0 the one waiting longest.
    EXPECT_EQ(t.resumed[0], (std::pair<long, std::string>{5, "chat"}));
    // Each next one: 20 s settle, then the 5 s `for`.
    EXPECT_EQ(t.resumed[1], (std::pair<long, std::string>{30, "embed"}));
    EXPECT_EQ(t.resumed[2], (std::pair<long, std::string>{55, "batch"}));
}

TEST(ResumePlanner, TheFirstInLineWaitsUntilItFitsAndNobodyOvertakesIt) {
    ResumePlanner planner;
    planner.configure(condition("host.mem.available > 1G for 5s"), 0s);
    HostTrace t(planner);
    TimePoint now = t.clock().now();
    t.waiting = {{"big", 5, now, 3 * GiB, "parked"}, {"small", 0, now, 100 * MiB, "suspended"}};
    // 2 GiB available: room by the condition, but not for 'big' (3 GiB).
    t.run(
        30, [](long s) { return s < 20 ? 2 * GiB : 4 * GiB; },
        [&](const ResumeDecision& d) { t.remove(d.worker); });
    ASSERT_GE(t.resumed.size(), 1u);
    EXPECT_EQ(t.resumed[0], (std::pair<long, std::string>{20, "big"}));
}

TEST(ResumePlanner, ARateConditionIsMeasuredFromTheHostsCounters) {
    ResumePlanner planner;
    planner.configure(condition("host.swap.in < 10 for 5s"), 0s);
    HostTrace t(planner);
    t.waiting = {{"low", 0, t.clock().now(), std::nullopt, "suspended"}};
    uint64_t pswpin = 0;
    std::optional<long> at;
    while (!at && t.seconds() < 60) {
        pswpin += t.seconds() < 10 ? 500 : 2;  // thrashing for 10 s, then quiet
        if (t.step(1 * GiB, pswpin)) at = t.seconds() - 1;
    }
    ASSERT_TRUE(at);
    // The rate is known from the second sample on; quiet from 10 s, held 5 s.
    EXPECT_EQ(*at, 15);
}

TEST(ResumePlanner, NothingWithoutAConditionOrWithNobodyWaiting) {
    ResumePlanner planner;
    HostTrace t(planner);
    t.waiting = {{"low", 0, t.clock().now(), 1 * MiB, "suspended"}};
    t.run(30, [](long) { return 3 * GiB; });
    EXPECT_TRUE(t.resumed.empty());

    planner.configure(condition("host.mem.available > 1G"), 0s);
    t.waiting.clear();
    t.run(60, [](long) { return 3 * GiB; });
    EXPECT_TRUE(t.resumed.empty());
}

TEST(ResumePlanner, FirstToResumeOrdersByPriorityThenWaitThenName) {
    TimePoint t0{std::chrono::hours(1)};
    std::vector<ResumeCandidate> w = {{"b", 1, t0, {}, ""},
                                      {"a", 1, t0, {}, ""},
                                      {"c", 1, t0 - 1s, {}, ""},
                                      {"d", 0, t0 - 1h, {}, ""}};
    EXPECT_EQ(first_to_resume(w), 2u);
    w.erase(w.begin() + 2);
    EXPECT_EQ(first_to_resume(w), 1u);
    EXPECT_FALSE(first_to_resume({}));
}

}  // namespace
}  // namespace infervisor
