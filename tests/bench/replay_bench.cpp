// Benchmark: what `infervisorctl simulate` costs for an hour of N workers
// sampled every 2 s (issue 31): the recording's size as the daemon keeps it
// (TraceRecorder), the time to record it, to decode it, and to replay it
// through the shipped rules. The workers hold still, but for one that leaks
// 10 MiB/s from the 30th minute and is acted on, so the replay decides as
// well as reads. Not a test: it asserts nothing and reports figures.
//
//   replay-bench [--workers N]
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "config/config_loader.h"
#include "metrics/trace_recorder.h"
#include "policy/trace_replay.h"
#include "supervise/policy_options.h"

using namespace infervisor;
using namespace std::chrono_literals;

namespace {

constexpr uint64_t MiB = 1ull << 20;

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

TraceRound round_at(int step, int workers) {
    double t = 2.0 * step;
    TraceRound r;
    r.time = TimePoint(std::chrono::milliseconds(step * 2000) + 1000h);
    r.wall_ms = 1'796'000'000'000 + step * 2000;
    r.host.mem_total = 64ull << 30;
    r.host.mem_available = (40ull << 30) - static_cast<uint64_t>(step % 3) * 4096;
    r.host.swap_total = 8ull << 30;
    r.host.swap_free = 8ull << 30;
    r.host.pswpin = 1000;
    r.host.pswpout = 2000;
    r.host.memory_pressure = PsiReading{{0.1, 0.05, 0.01, 0}, PsiAverages{0, 0, 0, 0}};
    r.host.cpu_pressure = PsiReading{{2.5, 2.1, 1.9, 0}, std::nullopt};
    r.host.io_pressure = PsiReading{{0.3, 0.2, 0.1, 0}, PsiAverages{0.1, 0.1, 0, 0}};
    for (int i = 0; i < workers; ++i) {
        TraceWorker w;
        w.name = "worker-" + std::to_string(i);
        WorkerSample& s = w.sample;
        double mib = 800 + (i == 0 && t > 1800 ? 10 * (t - 1800) : 0);
        s.memory_current = static_cast<uint64_t>(mib * MiB) + (step % 2) * 4096;
        s.memory_anon = *s.memory_current - 100 * MiB;
        s.memory_max = 4096 * MiB;
        s.memory_high = 3800 * MiB;
        s.swap_current = 0;
        s.swap_max = 0;
        s.memory_events = MemoryEvents{};
        s.cpu_usage_usec = static_cast<uint64_t>(t * 1e6 * 0.4) + i;
        s.swapin_pages = 0;
        s.swapout_pages = 0;
        s.memory_unevictable = 0;
        s.memory_pressure = PsiReading{{0, 0, 0, 0}, PsiAverages{0, 0, 0, 0}};
        s.cpu_pressure = PsiReading{{1.5, 1.2, 1.0, 0}, std::nullopt};
        s.io_pressure = PsiReading{{0, 0, 0, 0}, PsiAverages{0, 0, 0, 0}};
        s.started_at = TimePoint(1000h);
        s.ready_at = TimePoint(1000h + 30s);
        s.signals_readiness = true;
        w.candidate.name = w.name;
        r.workers.push_back(std::move(w));
    }
    return r;
}

}  // namespace

int main(int argc, char** argv) {
    int workers = 20;
    for (int i = 1; i + 1 < argc; ++i)
        if (std::strcmp(argv[i], "--workers") == 0) workers = std::atoi(argv[i + 1]);
    auto loaded = load_config({INFERVISOR_SHIPPED_CONFIG, "/nonexistent"});
    if (!loaded.errors.empty()) {
        std::fprintf(stderr, "%s\n", loaded.errors.format().c_str());
        return 1;
    }
    const int rounds = 1800;  // an hour at 2 s

    TraceRecorder recorder(1h);
    auto t0 = std::chrono::steady_clock::now();
    for (int step = 0; step < rounds; ++step) recorder.add(round_at(step, workers));
    double record_s = seconds_since(t0);

    std::vector<TraceEntry> trace;
    auto chunk = recorder.read(0, SIZE_MAX);
    auto t1 = std::chrono::steady_clock::now();
    for (const auto& b : chunk.blocks)
        if (!decode_trace_block(b.bytes, trace)) return 1;
    double decode_s = seconds_since(t1);

    PolicyEngine engine(policy_options(loaded.config.daemon));
    configure_engine(engine, loaded.config.daemon);
    engine.set_default_rules(loaded.config.default_rules);
    engine.set_host_rules(loaded.config.host_rules);
    auto t2 = std::chrono::steady_clock::now();
    ReplayResult r = replay_trace(trace, engine);
    double replay_s = seconds_since(t2);

    size_t decisions = 0;
    for (const auto& item : r.items) decisions += item.kind == ReplayItem::Kind::would;
    std::printf(
        "replay-bench: %d workers x %d rounds (an hour at 2s): recording %zu bytes (%.1f a "
        "worker sample); record %.1f ms (%.1f us a round), decode %.1f ms, replay with the "
        "shipped rules %.1f ms (%zu decisions)\n",
        workers, rounds, recorder.bytes(),
        static_cast<double>(recorder.bytes()) / (static_cast<double>(rounds) * workers),
        record_s * 1e3, record_s * 1e6 / rounds, decode_s * 1e3, replay_s * 1e3, decisions);
    return 0;
}
