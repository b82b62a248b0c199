#include "metrics/history_ring.h"

#include <gtest/gtest.h>

namespace infervisor {
namespace {

HistoryPoint at(int64_t t) {
    HistoryPoint p;
    p.time_ms = t;
    p.memory_kib = static_cast<uint32_t>(t);
    return p;
}

std::vector<int64_t> times(const HistoryRing& ring) {
    std::vector<int64_t> out;
    for (const auto& p : ring.points()) out.push_back(p.time_ms);
    return out;
}

TEST(HistoryRing, KeepsTheNewestPointsOldestFirst) {
    HistoryRing ring(3);
    EXPECT_TRUE(ring.points().empty());
    ring.add(at(1));
    ring.add(at(2));
    EXPECT_EQ(times(ring), (std::vector<int64_t>{1, 2}));
    ring.add(at(3));
    ring.add(at(4));
    ring.add(at(5));
    EXPECT_EQ(times(ring), (std::vector<int64_t>{3, 4, 5}));
    EXPECT_EQ(ring.size(), 3u);
}

TEST(HistoryRing, MemoryStaysFixedHoweverLongItRuns) {
    HistoryRing ring(100);
    for (int64_t t = 0; t < 100'000; ++t) ring.add(at(t));
    EXPECT_EQ(ring.size(), 100u);
    EXPECT_EQ(ring.points().front().time_ms, 99'900);
    EXPECT_EQ(ring.points().back().time_ms, 99'999);
    EXPECT_LE(sizeof(HistoryPoint), 40u);
}

TEST(HistoryRing, CapacityIsBounded) {
    EXPECT_EQ(HistoryRing(0).capacity(), 1u);
    EXPECT_EQ(HistoryRing(1'000'000).capacity(), HistoryRing::kMaxPoints);
}

TEST(HistoryRing, ShrinkingKeepsTheNewestAndGrowingKeepsAll) {
    HistoryRing ring(4);
    for (int64_t t = 1; t <= 6; ++t) ring.add(at(t));  // wrapped: 3 4 5 6
    ring.set_capacity(2);
    EXPECT_EQ(times(ring), (std::vector<int64_t>{5, 6}));
    ring.set_capacity(5);
    ring.add(at(7));
    EXPECT_EQ(times(ring), (std::vector<int64_t>{5, 6, 7}));
    for (int64_t t = 8; t <= 10; ++t) ring.add(at(t));
    EXPECT_EQ(times(ring), (std::vector<int64_t>{6, 7, 8, 9, 10}));
}

TEST(HistoryRing, ActionsAreBoundedToo) {
    HistoryRing ring(10);
    for (size_t i = 0; i < HistoryRing::kMaxActions + 5; ++i)
        ring.add_action({static_cast<int64_t>(i), "growth", "kill", false});
    EXPECT_EQ(ring.actions().size(), HistoryRing::kMaxActions);
    EXPECT_EQ(ring.actions().front().time_ms, 5);
}

TEST(HistoryRing, CompactUnits) {
    EXPECT_EQ(to_kib(std::nullopt), HistoryPoint::kNone);
    EXPECT_EQ(to_kib(2048), 2u);
    EXPECT_EQ(to_kib(UINT64_MAX), HistoryPoint::kNone - 1);  // saturates, never "none"
    EXPECT_EQ(to_centi_percent(std::nullopt), HistoryPoint::kNoPercent);
    EXPECT_EQ(to_centi_percent(12.345), 1235);
    EXPECT_EQ(to_centi_percent(250.0), 10000);
    EXPECT_EQ(to_centi_percent(-1.0), 0);
}

TEST(HistoryRing, ReservesNoMoreThanItsCapacity) {
    HistoryRing ring(1800);  // 1 h at 2 s
    for (int i = 0; i < 5000; ++i) ring.add(HistoryPoint{.time_ms = i});
    EXPECT_EQ(ring.size(), 1800u);
    EXPECT_EQ(ring.reserved_bytes(), 1800 * sizeof(HistoryPoint));
    EXPECT_EQ(ring.points().back().time_ms, 4999);
}

}  // namespace
}  // namespace infervisor
