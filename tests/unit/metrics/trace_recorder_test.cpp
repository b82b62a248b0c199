// TraceRecorder (metrics/trace_recorder.h): bounded by time and by bytes,
// read in chunks that add up to the whole recording, nothing when off.
#include "metrics/trace_recorder.h"

#include <gtest/gtest.h>

namespace infervisor {
namespace {

using namespace std::chrono_literals;

TraceRound round_at(int64_t seconds, int workers) {
    TraceRound r;
    r.time = TimePoint(std::chrono::seconds(seconds) + 1000h);
    r.wall_ms = 1'796'000'000'000 + seconds * 1000;
    r.host.mem_available = static_cast<uint64_t>(seconds) * 4096;
    for (int i = 0; i < workers; ++i) {
        TraceWorker w;
        w.name = "worker-" + std::to_string(i);
        w.sample.memory_current = static_cast<uint64_t>(seconds * 1'000'003 + i);
        w.sample.cpu_usage_usec = static_cast<uint64_t>(seconds * 7'777'777);
        r.workers.push_back(std::move(w));
    }
    return r;
}

std::vector<TraceEntry> everything(const TraceRecorder& recorder, size_t chunk_bytes) {
    std::vector<TraceEntry> out;
    uint64_t from = 0;
    for (;;) {
        auto chunk = recorder.read(from, chunk_bytes);
        for (const auto& b : chunk.blocks) {
            EXPECT_GE(b.sequence, from);
            from = b.sequence + 1;
            EXPECT_TRUE(decode_trace_block(b.bytes, out));
        }
        if (!chunk.more) return out;
    }
}

TEST(TraceRecorderTest, KeepsTheLastHourOnlyAndReadsBackInChunksWhole) {
    TraceRecorder recorder(1h);
    for (int64_t t = 0; t < 3 * 3600; t += 2) recorder.add(round_at(t, 5));
    auto all = everything(recorder, 64 * 1024);
    ASSERT_FALSE(all.empty());
    // Whole blocks go: what is left starts within a quarter hour before the hour.
    auto first = std::get<TraceRound>(all.front()).wall_ms;
    auto last = std::get<TraceRound>(all.back()).wall_ms;
    EXPECT_EQ(last, round_at(3 * 3600 - 2, 0).wall_ms);
    EXPECT_GE(last - first, 3600'000 - 2000 - 15 * 60'000);
    EXPECT_LE(last - first, 3600'000 + 15 * 60'000);
    // In order, each round once.
    for (size_t i = 1; i < all.size(); ++i)
        EXPECT_EQ(entry_wall_ms(all[i]) - entry_wall_ms(all[i - 1]), 2000);
    // The same whole, read in small chunks.
    EXPECT_EQ(everything(recorder, 1).size(), all.size());
}

TEST(TraceRecorderTest, HoldsNoMoreThanItsBytesWhateverTheWorkers) {
    TraceRecorder recorder(24h, 256 * 1024);
    for (int64_t t = 0; t < 4 * 3600; t += 2) recorder.add(round_at(t, 40));
    EXPECT_LE(recorder.bytes(), 256u * 1024 + TraceRecorder::kBlockBytes);
    EXPECT_FALSE(everything(recorder, 1 << 20).empty());
}

TEST(TraceRecorderTest, AHistoryOfZeroRecordsNothingAndDropsWhatItHeld) {
    TraceRecorder recorder(1h);
    recorder.add(round_at(0, 2));
    EXPECT_GT(recorder.bytes(), 0u);
    recorder.set_keep(0ms);
    EXPECT_FALSE(recorder.keeping());
    EXPECT_EQ(recorder.bytes(), 0u);
    recorder.add(round_at(2, 2));
    EXPECT_EQ(recorder.bytes(), 0u);
    EXPECT_TRUE(recorder.read(0, 1 << 20).blocks.empty());
}

}  // namespace
}  // namespace infervisor
