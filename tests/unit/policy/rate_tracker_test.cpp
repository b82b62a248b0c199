#include "policy/rate_tracker.h"

#include <gtest/gtest.h>

#include <cmath>

namespace infervisor {
namespace {

using namespace std::chrono_literals;

const TimePoint t0{std::chrono::hours(1)};

TEST(GrowthTracker, SteadyLeakShowsItsSlope) {
    GrowthTracker g(60s);
    for (int s = 0; s <= 120; s += 5) g.add(t0 + std::chrono::seconds(s), 1000.0 + 10.0 * s);
    ASSERT_TRUE(g.per_minute());
    EXPECT_DOUBLE_EQ(*g.per_minute(), 600.0);  // 10/s
}

TEST(GrowthTracker, NoAnswerUntilHalfAWindowOfHistory) {
    GrowthTracker g(60s);
    g.add(t0, 0);
    EXPECT_FALSE(g.per_minute());
    g.add(t0 + 10s, 100);
    EXPECT_FALSE(g.per_minute());
    g.add(t0 + 30s, 300);
    ASSERT_TRUE(g.per_minute());
    EXPECT_DOUBLE_EQ(*g.per_minute(), 600.0);
}

TEST(GrowthTracker, AOneOffJumpIsForgottenAfterTheWindow) {
    GrowthTracker g(60s);
    g.add(t0, 100);
    g.add(t0 + 30s, 100);
    g.add(t0 + 35s, 500);  // model loaded
    for (int s = 40; s <= 90; s += 5) g.add(t0 + std::chrono::seconds(s), 500);
    EXPECT_GT(*g.per_minute(), 0.0) << "the jump is still inside the window";
    for (int s = 95; s <= 100; s += 5) g.add(t0 + std::chrono::seconds(s), 500);
    EXPECT_DOUBLE_EQ(*g.per_minute(), 0.0);
}

TEST(GrowthTracker, IgnoresSamplesOutOfOrder) {
    GrowthTracker g(10s);
    g.add(t0, 0);
    g.add(t0 + 10s, 100);
    g.add(t0 + 5s, 1'000'000);
    EXPECT_DOUBLE_EQ(*g.per_minute(), 600.0);
}

TEST(GrowthTracker, AShorterWindowAnswersSoonerAndAppliesFromTheNextSample) {
    GrowthTracker g(60s);
    g.add(t0, 0);
    g.add(t0 + 5s, 50);
    EXPECT_FALSE(g.per_minute());
    g.set_window(10s);
    EXPECT_EQ(g.window(), 10s);
    ASSERT_TRUE(g.per_minute()) << "5 s of history is half of the new window";
    EXPECT_DOUBLE_EQ(*g.per_minute(), 600.0);
    // A slope change is seen after one short window, not one long one.
    for (int s = 6; s <= 20; ++s) g.add(t0 + std::chrono::seconds(s), 50);
    EXPECT_DOUBLE_EQ(*g.per_minute(), 0.0);
}

TEST(CounterRate, MeasuresPerSecondBetweenSamples) {
    CounterRate r(1s);
    r.add(t0, 1000);
    EXPECT_FALSE(r.per_second());
    r.add(t0 + 5s, 1500);
    EXPECT_DOUBLE_EQ(*r.per_second(), 100.0);
    r.add(t0 + 10s, 1500);
    EXPECT_DOUBLE_EQ(*r.per_second(), 0.0);
}

TEST(CounterRate, CloseSamplesKeepThePreviousRate) {
    CounterRate r(1s);
    r.add(t0, 0);
    r.add(t0 + 2s, 200);
    r.add(t0 + 2100ms, 200);  // a PSI wake-up right after a tick
    EXPECT_DOUBLE_EQ(*r.per_second(), 100.0);
    r.add(t0 + 3s, 400);
    EXPECT_DOUBLE_EQ(*r.per_second(), 200.0);
}

TEST(CounterRate, ACounterResetGivesNoRateForOneInterval) {
    CounterRate r(1s);
    r.add(t0, 5000);
    r.add(t0 + 1s, 5100);
    r.add(t0 + 2s, 10);  // cgroup recreated
    EXPECT_FALSE(r.per_second());
    r.add(t0 + 3s, 60);
    EXPECT_DOUBLE_EQ(*r.per_second(), 50.0);
}

EngineReading reading_at(TimePoint t, EngineSeries series) { return {t, std::move(series)}; }

TEST(SeriesRates, EachSeriesPerSecondBetweenTheLastTwoReadings) {
    SeriesRates rates;
    TimePoint t0{};
    rates.add(reading_at(t0, {{"tokens", 100}, {"queue", 3}}));
    ASSERT_NE(rates.rates(), nullptr);
    EXPECT_TRUE(rates.rates()->empty());  // one reading: no rate yet
    rates.add(
        reading_at(t0 + std::chrono::seconds(2), {{"tokens", 140}, {"queue", 1}, {"new", 5}}));
    ASSERT_NE(rates.rates(), nullptr);
    EXPECT_EQ(rates.rates()->at("tokens"), 20.0);
    EXPECT_FALSE(rates.rates()->contains("queue")) << "went down: no rate";
    EXPECT_FALSE(rates.rates()->contains("new")) << "not in the reading before";
}

TEST(SeriesRates, TheSameReadingAgainKeepsTheRatesAndNoneMeansNone) {
    SeriesRates rates;
    TimePoint t0{};
    rates.add(reading_at(t0, {{"tokens", 0}}));
    auto second = reading_at(t0 + std::chrono::seconds(1), {{"tokens", 10}});
    rates.add(second);
    rates.add(second);  // a wake-up between two scrapes
    ASSERT_NE(rates.rates(), nullptr);
    EXPECT_EQ(rates.rates()->at("tokens"), 10.0);
    rates.add(std::nullopt);  // a failed or late scrape
    EXPECT_EQ(rates.rates(), nullptr);
    // The next reading is compared with the last there was.
    rates.add(reading_at(t0 + std::chrono::seconds(5), {{"tokens", 50}}));
    ASSERT_NE(rates.rates(), nullptr);
    EXPECT_EQ(rates.rates()->at("tokens"), 10.0);
}

TEST(SeriesRates, ACounterResetGivesNoRateForThatReading) {
    SeriesRates rates;
    TimePoint t0{};
    rates.add(reading_at(t0, {{"tokens", 5000}}));
    rates.add(reading_at(t0 + std::chrono::seconds(1), {{"tokens", 12}}));  // the server restarted
    ASSERT_NE(rates.rates(), nullptr);
    EXPECT_FALSE(rates.rates()->contains("tokens"));
    rates.add(reading_at(t0 + std::chrono::seconds(2), {{"tokens", 20}}));
    EXPECT_EQ(rates.rates()->at("tokens"), 8.0);
    rates.add(reading_at(t0 + std::chrono::seconds(3), {{"tokens", NAN}}));
    EXPECT_FALSE(rates.rates()->contains("tokens"));
}

}  // namespace
}  // namespace infervisor
