#include "history_chart.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "history_json.h"

namespace infervisor {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// A worker leaking 1 MiB per 2 s sample up to 64 of 96 MiB (memory.high at
// 80 MiB), with pressure rising at the end and a kill at the last sample.
WorkerHistory leaking(size_t n) {
    WorkerHistory h;
    h.interval_usec = 2'000'000;
    for (size_t i = 0; i < n; ++i) {
        HistoryPoint p;
        p.time_ms = 1'700'000'000'000 + static_cast<int64_t>(i) * 2000;
        p.memory_kib = static_cast<uint32_t>((i + 1) * 64 * 1024 / n);
        p.memory_max_kib = 96 * 1024;
        p.memory_high_kib = 80 * 1024;
        p.swap_kib = 0;
        p.memory_some_avg10 = static_cast<uint16_t>(i * 10000 / n);
        h.points.push_back(p);
    }
    h.actions.push_back({h.points.back().time_ms, "growth", "kill", false});
    h.actions.push_back({h.points.front().time_ms, "early", "log", true});
    return h;
}

TEST(HistoryChart, DrawsMemoryAgainstItsLimitsWithActionsMarked) {
    auto json = history_to_json(leaking(40));
    auto lines = cli::draw_history("leaky", json, {40, 6});
    ASSERT_GE(lines.size(), 11u);
    EXPECT_THAT(lines[0], StartsWith("leaky: last 1m18s (40 samples, every 2s); memory.max 96M, "
                                     "memory.high 80M"));
    // Row 6 of 6 (top) is labelled with the scale; max (96M = top) shares it.
    EXPECT_THAT(lines[1], StartsWith("     max "));
    EXPECT_THAT(lines[2], StartsWith("    high "));
    EXPECT_THAT(lines[2], HasSubstr("╌"));
    // The last column reaches 64 of 96 MiB: the 4th row from the bottom is full there.
    EXPECT_THAT(lines[3], HasSubstr("█"));
    EXPECT_THAT(lines[7], StartsWith("     psi "));
    EXPECT_THAT(lines[9], StartsWith(" actions l"));  // the dry-run log, first column
    EXPECT_EQ(lines[9].back(), 'K');                  // the kill, last column
    EXPECT_THAT(lines[10], HasSubstr("-1m18s"));
    EXPECT_THAT(lines.back(), HasSubstr("rule 'early': log (dry run)"));
}

TEST(HistoryChart, MoreSamplesThanColumnsAreFolded) {
    auto lines = cli::draw_history("w", history_to_json(leaking(1800)), {60, 5});
    for (size_t i = 1; i <= 5; ++i) {
        // label (8) + space + 60 columns, each one code point
        std::string row = lines[i].substr(9);
        size_t code_points = 0;
        for (unsigned char c : row) code_points += (c & 0xC0) != 0x80;
        EXPECT_EQ(code_points, 60u) << lines[i];
    }
}

TEST(HistoryChart, NoSamplesSaysWhy) {
    WorkerHistory empty;
    auto lines = cli::draw_history("w", history_to_json(empty), {60, 5});
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_THAT(lines[0], HasSubstr("no samples yet"));
}

TEST(HistoryChart, CsvHasOneRowPerSampleAndEmptyCellsForUnknowns) {
    WorkerHistory h = leaking(2);
    h.points[0].memory_max_kib = HistoryPoint::kNone;
    std::string csv = cli::history_csv(history_to_json(h));
    EXPECT_THAT(csv, StartsWith("time_usec,memory_current,memory_max,memory_high,swap_current,"));
    EXPECT_THAT(csv, HasSubstr("\n1700000000000000,33554432,,83886080,0,0.0,,,\n"));
    EXPECT_THAT(csv, HasSubstr("\n1700000002000000,67108864,100663296,83886080,0,50.0,,,\n"));
}

}  // namespace
}  // namespace infervisor
