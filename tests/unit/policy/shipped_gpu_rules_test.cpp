// Issue 30: the SHIPPED worker rules on GPU memory (etc/infervisor.yaml's
// gpu-near-the-cap and gpu-runaway-growth), replayed on a worker whose RAM
// has settled (serving) and whose GPU memory follows a function of time: a
// server that takes its pool at once and holds it is left alone, a leak in
// VRAM is stopped, a worker without gpu.memory_max is never judged, and the
// load is never judged.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <functional>

#include "config/config_loader.h"
#include "policy/policy_engine.h"
#include "supervise/policy_options.h"

namespace infervisor {
namespace {

using namespace std::chrono_literals;
constexpr double GiB = 1024.0 * 1024 * 1024;

Config shipped_config() {
    const char* src = std::getenv("INFERVISOR_SOURCE_ROOT");
    const char* build = std::getenv("INFERVISOR_BUILD_ROOT");
    EXPECT_NE(src, nullptr);
    EXPECT_NE(build, nullptr);
    if (!src || !build) return {};
    auto loaded = load_config(
        {std::filesystem::path(src) / "etc/infervisor.yaml", std::filesystem::path(build) / "etc"});
    EXPECT_TRUE(loaded.ok()) << loaded.errors.format();
    return loaded.config;
}

struct Outcome {
    std::string rule;  // the first decision's; empty: none
    double at = -1;    // seconds since the start
};

// One worker: 4 GiB of RAM reached within 20s then steady, its GPU memory
// `gib(t)` t seconds after its start; `cap`: gpu.memory_max in GiB (0: none).
Outcome replay(std::function<double(double)> gib, double cap, double seconds) {
    Config shipped = shipped_config();
    PolicyEngine engine(policy_options(shipped.daemon));
    configure_engine(engine, shipped.daemon);
    engine.set_default_rules(shipped.default_rules);
    const double step = std::chrono::duration<double>(shipped.daemon.sample_interval).count();
    const TimePoint start = TimePoint{} + 1h;
    for (double t = 0; t < seconds; t += step) {
        WorkerSample s;
        s.time = start + Duration(std::llround(t * 1000));
        s.started_at = start;
        s.memory_current = static_cast<uint64_t>(std::min(t / 20.0, 1.0) * 4 * GiB);
        s.memory_max = static_cast<uint64_t>(8 * GiB);
        s.memory_anon = s.memory_current;
        s.gpu_memory = static_cast<uint64_t>(gib(t) * GiB);
        if (cap > 0) s.gpu_memory_max = static_cast<uint64_t>(cap * GiB);
        s.gpu_device_memory = static_cast<uint64_t>(80 * GiB);
        for (auto& d : engine.evaluate("w", s, s.time, std::nullopt))
            if (d.action != Action::log) return {d.rule, t};
    }
    return {};
}

TEST(ShippedGpuRules, AServerThatTakesItsPoolAtOnceAndHoldsItIsLeftAlone) {
    // vLLM: 97% of its cap allocated during the load, then flat for 10 min.
    Outcome o = replay([](double t) { return t < 30 ? t / 30 * 38.8 : 38.8; }, 40, 600);
    EXPECT_EQ(o.rule, "") << "at " << o.at << "s";
}

TEST(ShippedGpuRules, APoolTakenAfterTheRamSettledAndTheStepsAfterItAreLeftAlone) {
    // RAM flat from 20s; the KV pool (96% of the cap) at 60s, CUDA graphs
    // 10s later (+0.4G) and a workspace 20s after that (+0.2G): steps, not a
    // trend.
    Outcome o = replay([](double t) { return t < 60   ? 2.0
                                             : t < 70 ? 38.4
                                             : t < 90 ? 38.8
                                                      : 39.0; },
                       40, 900);
    EXPECT_EQ(o.rule, "") << "at " << o.at << "s";
}

TEST(ShippedGpuRules, ALeakInGpuMemoryIsStoppedBeforeTheCard) {
    // Serving at 10 GiB, then its KV cache leaks 2 GiB a minute (5% of the
    // 40G cap a minute): it reaches 95% near 10 min in and goes on.
    Outcome slow =
        replay([](double t) { return t < 120 ? 10 : 10 + (t - 120) / 60 * 2; }, 40, 1800);
    EXPECT_EQ(slow.rule, "gpu-near-the-cap");
    EXPECT_GT(slow.at, 120 + 60 * (38.0 - 10) / 2);  // not before it was at 95%
    // 12 GiB a minute: a runaway, stopped about a minute after it began.
    Outcome fast =
        replay([](double t) { return t < 120 ? 10 : 10 + (t - 120) / 60 * 12; }, 40, 400);
    EXPECT_EQ(fast.rule, "gpu-runaway-growth");
    EXPECT_LT(fast.at, 120 + 150);
}

TEST(ShippedGpuRules, WithoutACapNothingIsJudged) {
    Outcome o = replay([](double t) { return t < 120 ? 10 : 10 + (t - 120) / 60 * 12; }, 0, 400);
    EXPECT_EQ(o.rule, "");
}

}  // namespace
}  // namespace infervisor
