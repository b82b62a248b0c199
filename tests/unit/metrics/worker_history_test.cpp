#include "metrics/worker_history.h"

#include <gtest/gtest.h>

namespace infervisor {
namespace {

using namespace std::chrono_literals;

constexpr int64_t kWall = 1'700'000'000'000;
constexpr uint64_t MiB = 1u << 20;

TimePoint at(double seconds) {
    return TimePoint(std::chrono::duration_cast<Duration>(std::chrono::duration<double>(seconds)));
}
int64_t wall(double seconds) { return kWall + static_cast<int64_t>(seconds * 1000); }

TraceWorker worker(const std::string& name, uint64_t memory, double seconds) {
    TraceWorker w;
    w.name = name;
    w.candidate.name = name;
    w.sample.time = at(seconds);
    w.sample.started_at = at(0);
    w.sample.memory_current = memory;
    w.sample.memory_max = 96 * MiB;
    return w;
}

TraceRound round_at(double seconds, std::vector<TraceWorker> workers, bool woken = false) {
    return TraceRound{at(seconds), wall(seconds), woken, {}, std::move(workers)};
}

TraceEvent decision(double seconds, const std::string& worker, const std::string& action,
                    bool dry_run = false) {
    return TraceEvent{at(seconds), wall(seconds), TraceEventKind::decision,
                      worker,      "growth",      action,
                      dry_run,     "why"};
}

// Three rounds of two workers, with a wake-up between ticks and decisions
// on each worker: one worker's history is its samples and its decisions.
std::vector<TraceEntry> example() {
    std::vector<TraceEntry> trace;
    auto leaky = [](uint64_t mib, double t) {
        TraceWorker w = worker("leaky", mib * MiB, t);
        w.sample.swapin_pages = static_cast<uint64_t>(t * 25);  // 25 pages a second
        w.sample.memory_pressure = PsiReading{{12.5, 1, 1, 0}, PsiAverages{3.25, 1, 1, 0}};
        if (t > 0) w.growth_percent_per_min = 22.5;
        return w;
    };
    trace.push_back(decision(-1, "leaky", "log"));  // before the first sample: not shown
    trace.push_back(round_at(0, {leaky(40, 0), worker("chat", 1 * MiB, 0)}));
    trace.push_back(round_at(2, {leaky(41, 2), worker("chat", 1 * MiB, 2)}));
    trace.push_back(decision(2.5, "chat", "kill"));
    trace.push_back(round_at(3, {leaky(41, 3)}, true));  // woken by the kernel
    trace.push_back(decision(3.1, "leaky", "throttle", true));
    trace.push_back(round_at(4, {leaky(42, 4), worker("chat", 1 * MiB, 4)}));
    return trace;
}

TEST(WorkerHistoryTest, AWorkersSamplesAndDecisionsComeFromTheRecording) {
    WorkerHistory h = history_from_trace(example(), "leaky", 1800);
    ASSERT_EQ(h.points.size(), 4u);
    EXPECT_EQ(h.points[0].time_ms, wall(0));
    EXPECT_EQ(h.points[0].memory_kib, 40u * 1024);
    EXPECT_EQ(h.points[3].memory_kib, 42u * 1024);
    EXPECT_EQ(h.points[0].memory_max_kib, 96u * 1024);
    EXPECT_EQ(h.points[0].memory_high_kib, HistoryPoint::kNone);
    EXPECT_EQ(h.points[0].memory_some_avg10, 1250);
    EXPECT_EQ(h.points[0].memory_full_avg10, 325);
    EXPECT_FALSE(h.points[0].growth_known);
    EXPECT_TRUE(h.points[1].growth_known);
    EXPECT_FLOAT_EQ(h.points[1].growth_pct_per_min, 22.5f);
    EXPECT_LT(h.points[0].swap_in_pages_per_s, 0);            // no earlier sample
    EXPECT_FLOAT_EQ(h.points[1].swap_in_pages_per_s, 25.0f);  // 50 pages in 2 s
    EXPECT_FLOAT_EQ(h.points[2].swap_in_pages_per_s, 25.0f);  // the wake-up: 25 in 1 s
    // The sample interval: the ticks' gap, not the wake-up's.
    EXPECT_EQ(h.interval_usec, 2'000'000u);
    ASSERT_EQ(h.actions.size(), 1u);  // the one before the first sample is not shown
    EXPECT_EQ(h.actions[0].time_ms, wall(3.1));
    EXPECT_EQ(h.actions[0].rule, "growth");
    EXPECT_EQ(h.actions[0].action, "throttle");
    EXPECT_TRUE(h.actions[0].dry_run);

    WorkerHistory chat = history_from_trace(example(), "chat", 1800);
    EXPECT_EQ(chat.points.size(), 3u);
    ASSERT_EQ(chat.actions.size(), 1u);
    EXPECT_EQ(chat.actions[0].action, "kill");
    EXPECT_TRUE(history_from_trace(example(), "nobody", 1800).points.empty());
}

TEST(WorkerHistoryTest, TheNewestSamplesAreKeptWithTheDecisionsSinceTheFirst) {
    WorkerHistory h = history_from_trace(example(), "leaky", 2);
    ASSERT_EQ(h.points.size(), 2u);
    EXPECT_EQ(h.points[0].time_ms, wall(3));
    EXPECT_EQ(h.points[1].time_ms, wall(4));
    ASSERT_EQ(h.actions.size(), 1u);
    h = history_from_trace(example(), "leaky", 1);
    EXPECT_EQ(h.points.size(), 1u);
    EXPECT_TRUE(h.actions.empty());  // the throttle came before the newest sample
}

TEST(WorkerHistoryTest, ANewRunHasNoSwapRateFromTheOldOne) {
    std::vector<TraceEntry> trace;
    TraceWorker old_run = worker("w", MiB, 0);
    old_run.sample.swapin_pages = 100;
    TraceWorker new_run = worker("w", MiB, 2);
    new_run.sample.started_at = at(1);
    new_run.sample.swapin_pages = 120;
    trace.push_back(round_at(0, {old_run}));
    trace.push_back(round_at(2, {new_run}));
    WorkerHistory h = history_from_trace(trace, "w", 10);
    ASSERT_EQ(h.points.size(), 2u);
    EXPECT_LT(h.points[1].swap_in_pages_per_s, 0);
    EXPECT_EQ(h.interval_usec, 2'000'000u);
    EXPECT_EQ(history_from_trace({}, "w", 10).interval_usec, 0u);
}

// What the daemon records goes through the encoding: the growth figure
// (the engine's, not the kernel's) survives it.
TEST(WorkerHistoryTest, TheGrowthFigureSurvivesTheEncoding) {
    TraceBlockWriter writer;
    for (const auto& entry : example()) std::visit([&](const auto& e) { writer.add(e); }, entry);
    std::vector<TraceEntry> decoded;
    ASSERT_TRUE(decode_trace_block(writer.bytes(), decoded));
    WorkerHistory h = history_from_trace(decoded, "leaky", 1800);
    ASSERT_EQ(h.points.size(), 4u);
    EXPECT_FALSE(h.points[0].growth_known);
    EXPECT_TRUE(h.points[3].growth_known);
    EXPECT_FLOAT_EQ(h.points[3].growth_pct_per_min, 22.5f);
    EXPECT_FLOAT_EQ(h.points[1].swap_in_pages_per_s, 25.0f);
    EXPECT_EQ(h.actions.size(), 1u);
}

// The daemon journals every action it takes, whoever decided it: the
// history marks those (a resume_when resume, a watchdog kill), not only the
// engine's decisions, each once.
TEST(WorkerHistoryTest, TheJournaledActionsAreMarkedWhoeverDecidedThem) {
    std::vector<TraceEntry> trace = example();
    auto journaled = [](double t, const std::string& rule, const std::string& action) {
        return TraceEvent{at(t), wall(t), TraceEventKind::action, "leaky", rule, action};
    };
    trace.insert(trace.begin() + 6, journaled(3.1, "growth", "throttle"));  // after its decision
    trace.push_back(journaled(4.5, "watchdog", "kill"));
    trace.push_back(journaled(4.6, "resume_when", "resume"));
    WorkerHistory h = history_from_trace(trace, "leaky", 1800);
    ASSERT_EQ(h.actions.size(), 3u);
    EXPECT_EQ(h.actions[0].action, "throttle");
    EXPECT_FALSE(h.actions[0].dry_run);  // as journaled
    EXPECT_EQ(h.actions[1].rule, "watchdog");
    EXPECT_EQ(h.actions[2].rule, "resume_when");
}

TEST(WorkerHistoryTest, CompactUnits) {
    EXPECT_EQ(to_kib(std::nullopt), HistoryPoint::kNone);
    EXPECT_EQ(to_kib(2048), 2u);
    EXPECT_EQ(to_kib(UINT64_MAX), HistoryPoint::kNone - 1);  // saturates, never "none"
    EXPECT_EQ(to_centi_percent(std::nullopt), HistoryPoint::kNoPercent);
    EXPECT_EQ(to_centi_percent(12.345), 1235);
    EXPECT_EQ(to_centi_percent(250.0), 10000);
    EXPECT_EQ(to_centi_percent(-1.0), 0);
}

}  // namespace
}  // namespace infervisor
