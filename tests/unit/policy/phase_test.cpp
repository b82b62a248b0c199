// Loading vs serving, on recorded traces, with the SHIPPED rules
// (etc/infervisor.yaml) and the engine configured as the daemon configures
// it (policy_options.h): a 300 MB load in 3 s, a 12 GB load over 4 minutes, a
// leak after a load, a leak from the start, a steady server with noise.
// Every rule of the shipped config may fire on the leaks only.
#include <gmock/gmock.h>

#include <cmath>
#include <functional>
#include <map>

#include "config/config_loader.h"
#include "policy/policy_engine.h"
#include "policy/rule_config.h"
#include "policy/worker_phase.h"
#include "supervise/policy_options.h"
#include "support/byte_units.h"
#include "support/fake_clock.h"
#include "support/measurement.h"

namespace infervisor {
namespace {

using namespace std::chrono_literals;
using ::testing::IsEmpty;

const Config& shipped() {
    static const Config config = [] {
        const char* src = std::getenv("INFERVISOR_SOURCE_ROOT");
        EXPECT_NE(src, nullptr);
        auto loaded = load_config({std::filesystem::path(src ? src : ".") / "etc/infervisor.yaml",
                                   "/nonexistent/infervisor-workers.d"});
        EXPECT_TRUE(loaded.ok()) << loaded.errors.format();
        return loaded.config;
    }();
    return config;
}

// One worker's recorded memory: bytes at t seconds after its start.
struct WorkerTrace {
    std::string name;
    std::function<double(double t)> memory;
    uint64_t memory_max = 1 * GiB;
    std::optional<double> ready_after;  // seconds; set: a notify worker
    Duration load_limit = 10min;        // start_timeout
};

struct Fired {
    double t;  // seconds since the start
    Decision decision;
};

// Replays workers on a host of `mem_total` where everything but the workers
// uses `base`; MemAvailable is what is left. Samples every sample_interval.
class Replay {
  public:
    explicit Replay(uint64_t mem_total = 64 * GiB, uint64_t base = 1 * GiB)
        : mem_total_(mem_total), base_(base) {
        configure_engine(engine_, shipped().daemon);
        engine_.set_default_rules(shipped().default_rules);
        engine_.set_host_rules(shipped().host_rules);
    }

    std::vector<Fired> run(const std::vector<WorkerTrace>& workers, double seconds) {
        const double every =
            std::chrono::duration<double>(shipped().daemon.sample_interval).count();
        const TimePoint start = clock_.now();
        std::vector<Fired> out;
        for (double t = 0; t <= seconds; t += every) {
            TimePoint now = start + std::chrono::milliseconds(std::llround(t * 1000));
            uint64_t used = base_;
            std::vector<WorkerCandidate> candidates;
            for (const auto& w : workers) {
                WorkerSample s = sample(w, start, now, t);
                used += *s.memory_current;
                for (auto& d : engine_.evaluate(w.name, s, now)) out.push_back({t, std::move(d)});
                candidates.push_back({w.name, 0, false});
            }
            HostSample h;
            h.time = now;
            h.mem_total = mem_total_;
            h.mem_available = used < mem_total_ ? mem_total_ - used : 0;
            for (auto& d : engine_.evaluate_host(h, candidates, now))
                out.push_back({t, std::move(d)});
            for (const auto& w : workers) phases_[w.name][t] = *engine_.phase_of(w.name);
        }
        return out;
    }

    WorkerPhase phase_at(const std::string& worker, double t) { return phases_[worker][t]; }

  private:
    static WorkerSample sample(const WorkerTrace& w, TimePoint start, TimePoint now, double t) {
        WorkerSample s;
        s.time = now;
        s.started_at = start;
        s.memory_max = w.memory_max;
        // The cap holds: the kernel stops it there.
        s.memory_current = static_cast<uint64_t>(std::min<double>(w.memory(t), w.memory_max));
        s.signals_readiness = w.ready_after.has_value();
        if (w.ready_after && t >= *w.ready_after)
            s.ready_at = start + std::chrono::milliseconds(std::llround(*w.ready_after * 1000));
        if (!w.ready_after) s.ready_at = start;  // what Worker::ready_at() says: at exec
        s.load_limit = w.load_limit;
        return s;
    }

    uint64_t mem_total_;
    uint64_t base_;
    FakeClock clock_;
    PolicyEngine engine_;
    std::map<std::string, std::map<double, WorkerPhase>> phases_;
};

// A little deterministic noise: +-4 MiB, never two samples alike in a row.
double noise(double t) { return 4.0 * MiB * std::sin(t * 1.7) * std::cos(t * 0.3); }

// Linear from `from` to `to` over [t0, t1], flat outside.
double ramp(double t, double t0, double t1, double from, double to) {
    if (t <= t0) return from;
    if (t >= t1) return to;
    return from + (to - from) * (t - t0) / (t1 - t0);
}

std::vector<std::string> rules_of(const std::vector<Fired>& fired) {
    std::vector<std::string> out;
    for (const auto& f : fired) out.push_back(f.decision.rule + "@" + f.decision.worker);
    return out;
}

// --- The innocent: never a decision, whatever the load looks like. ---------

TEST(Phases, A300MBLoadIn3sIsNeverALeak) {
    for (bool notify : {false, true}) {
        Replay replay(1 * GiB, 200 * MiB);
        WorkerTrace w{"fast",
                      [](double t) { return ramp(t, 0, 3, 10 * MiB, 310 * MiB) + noise(t); },
                      600 * MiB};
        if (notify) w.ready_after = 4;
        EXPECT_THAT(rules_of(replay.run({w}, 600)), IsEmpty()) << "notify " << notify;
        EXPECT_EQ(replay.phase_at("fast", 2), WorkerPhase::loading);
        EXPECT_EQ(replay.phase_at("fast", 600), WorkerPhase::serving);
    }
}

TEST(Phases, A12GBLoadOver4MinutesIsNeverALeak) {
    for (bool notify : {false, true}) {
        Replay replay(32 * GiB);
        WorkerTrace w{"big",
                      [](double t) { return ramp(t, 0, 240, 50 * MiB, 12.0 * GiB) + noise(t); },
                      14 * GiB};
        if (notify) w.ready_after = 242;
        EXPECT_THAT(rules_of(replay.run({w}, 900)), IsEmpty()) << "notify " << notify;
        EXPECT_EQ(replay.phase_at("big", 230), WorkerPhase::loading);
        EXPECT_EQ(replay.phase_at("big", 900), WorkerPhase::serving);
    }
}

TEST(Phases, ASteadyServerWithNoiseIsNeverALeak) {
    Replay replay(2 * GiB, 300 * MiB);
    WorkerTrace w{"steady", [](double t) { return 500.0 * MiB + 3 * noise(t); }, 1 * GiB};
    EXPECT_THAT(rules_of(replay.run({w}, 3600)), IsEmpty());
    EXPECT_EQ(replay.phase_at("steady", 3600), WorkerPhase::serving);
}

TEST(Phases, TheFieldReportsFalsePositiveIsGone) {
    // The field report's tuned rule, growth_window 10s and `memory.growth >
    // 25%/min for 12s`, killed a worker filling its 300 MB model; the shipped
    // 60s window with `for 2m` would have killed a 12 GB load over 4 minutes.
    // With phases, neither load is measured at all.
    for (Duration window : {Duration(10'000), Duration(60'000)}) {
        PolicyEngine engine;
        engine.set_growth_window(window);
        ConfigErrors errors;
        auto tuned = parse_rules(YAML::Load(R"(
- {name: tuned, when: "memory.growth > 25%/min for 12s", action: kill, then: park}
- {name: old-default, when: "memory.growth > 25%/min for 2m", action: kill})"),
                                 errors, RuleScope::worker);
        validate_rules(tuned, errors);
        ASSERT_TRUE(errors.empty()) << errors.format();
        engine.set_default_rules(tuned);
        FakeClock clock;
        const TimePoint start = clock.now();
        for (double t = 0; t <= 900; t += 1) {
            WorkerSample s;
            s.time = start + std::chrono::milliseconds(std::llround(t * 1000));
            s.started_at = start;
            s.ready_at = start;  // no notify: Worker::ready_at() is the start
            s.memory_max = 16 * GiB;
            double small = ramp(t, 0, 3, 10 * MiB, 310 * MiB);
            double big = ramp(t, 0, 240, 50 * MiB, 12.0 * GiB);
            s.memory_current = static_cast<uint64_t>(small + big + noise(t));
            EXPECT_THAT(engine.evaluate("loader", s, s.time), IsEmpty()) << "t=" << t;
        }
    }
}

// --- The leaks: caught, and only once they leak. ---------------------------

TEST(Phases, ALeakAfterALoadIsCaughtAfterTheLoad) {
    for (bool notify : {false, true}) {
        Replay replay(4 * GiB);
        // 300 MB in 3 s, serving for 2 minutes, then 20 MiB/s.
        WorkerTrace w{"leaky",
                      [](double t) {
                          return ramp(t, 0, 3, 10 * MiB, 310 * MiB) + noise(t) +
                                 (t > 120 ? (t - 120) * 20 * MiB : 0);
                      },
                      1 * GiB};
        if (notify) w.ready_after = 4;
        auto fired = replay.run({w}, 300);
        ASSERT_FALSE(fired.empty()) << "notify " << notify;
        const Fired& first = fired.front();
        EXPECT_EQ(first.decision.rule, "near-the-cap");
        EXPECT_EQ(first.decision.action, Action::kill);
        EXPECT_GT(first.t, 120);
        // Well before the cap (1 GiB at 120 + 35.7 s), and the journal says why.
        EXPECT_LT(first.t, 155);
        EXPECT_EQ(measurement(first.decision, "PHASE"), "serving");
        EXPECT_EQ(measurement(first.decision, "SERVING_REASON"),
                  notify ? "ready" : "memory settled");
        EXPECT_NE(measurement(first.decision, "MEMORY_HEADROOM_SECONDS"), "<absent>");
    }
}

TEST(Phases, ASlowerLeakAfterALoadIsRunawayGrowth) {
    // 4 GiB cap, 3 GiB of room: 20 MiB/s is 29%/min of the cap, over
    // runaway-growth's 25%/min a minute before the headroom falls under 30s.
    Replay replay(64 * GiB);
    WorkerTrace w{"creep",
                  [](double t) {
                      return ramp(t, 0, 60, 0, 1.0 * GiB) + noise(t) +
                             (t > 300 ? (t - 300) * 20 * MiB : 0);
                  },
                  4 * GiB};
    w.ready_after = 61;
    auto fired = replay.run({w}, 600);
    ASSERT_FALSE(fired.empty());
    EXPECT_EQ(fired.front().decision.rule, "runaway-growth");
    EXPECT_GT(fired.front().t, 300 + 60);  // the rule's `for 1m`
    EXPECT_EQ(measurement(fired.front().decision, "PHASE"), "serving");
}

TEST(Phases, ALeakFromTheStartIsJudgedFromTheLoadLimitOn) {
    // Never plateaus, so it is loading until its start_timeout (2m here);
    // then the headroom rule stops it before its 4 GiB cap (at ~205 s).
    Replay replay(64 * GiB);
    WorkerTrace w{"leaker", [](double t) { return 20.0 * MiB * t + noise(t); }, 4 * GiB};
    w.load_limit = 2min;
    auto fired = replay.run({w}, 300);
    ASSERT_FALSE(fired.empty());
    EXPECT_EQ(fired.front().decision.rule, "near-the-cap");
    EXPECT_GT(fired.front().t, 120);
    EXPECT_LT(fired.front().t, 205);
    EXPECT_EQ(measurement(fired.front().decision, "SERVING_REASON"), "load limit");
    EXPECT_EQ(replay.phase_at("leaker", 118), WorkerPhase::loading);
}

TEST(Phases, ALeakFromTheStartNextToASteadyWorkerIsStoppedByTheHost) {
    // The tiny host of the field report: 1 GiB, 200 MB for the system, a
    // steady 300 MB worker and a worker leaking 20 MiB/s from its start under
    // a 600M cap; the caps add up to more than the host has. The leaker never
    // stops loading, so only host rules can see it: host-memory-running-out
    // (low and falling; issue 25 replaced the level-only host-memory-low of
    // this test's first version) takes it (the grower), not the steady one,
    // before MemAvailable is gone.
    Replay replay(1 * GiB, 200 * MiB);
    WorkerTrace steady{"steady", [](double t) { return 300.0 * MiB + noise(t); }, 400 * MiB};
    WorkerTrace leaker{"leaker", [](double t) { return 20.0 * MiB * t; }, 600 * MiB};
    auto fired = replay.run({steady, leaker}, 40);
    ASSERT_EQ(fired.size(), 1u) << ::testing::PrintToString(rules_of(fired));
    EXPECT_EQ(fired[0].decision.rule, "host-memory-running-out");
    EXPECT_EQ(fired[0].decision.worker, "leaker");
    EXPECT_EQ(measurement(fired[0].decision, "PHASE"), "loading");
    // 1 GiB - 200 - 300 = 524 MiB free at the start: under 25% at 13.4 s
    // (the sample at 14 s, then its `for 8s`), under 10% at 21.1 s, gone at
    // 26.2 s.
    EXPECT_LE(fired[0].t, 22);
}

// --- The phase machine itself. ---------------------------------------------

TEST(PhaseTracker, NotifyWorkerServesFromReadyAtOnly) {
    PhaseTracker phase;
    FakeClock clock;
    WorkerSample s;
    s.signals_readiness = true;
    s.memory_current = 100 * MiB;
    for (int i = 0; i < 100; ++i) {  // flat for 100 s, but no READY=1
        s.time = clock.now();
        EXPECT_EQ(phase.observe(s), WorkerPhase::loading);
        clock.advance(1s);
    }
    s.ready_at = clock.now() - 500ms;
    s.time = clock.now();
    EXPECT_EQ(phase.observe(s), WorkerPhase::serving);
    EXPECT_EQ(phase.serving_since(), s.ready_at);
    EXPECT_EQ(phase.why(), "ready");
}

TEST(PhaseTracker, SettlesOnlyOnceTheWholeSpanIsFlat) {
    PhaseOptions options;
    options.settle = 20s;
    PhaseTracker phase(options);
    FakeClock clock;
    WorkerSample s;
    s.memory_max = 1 * GiB;  // band: 2% = 20.5 MiB
    auto at = [&](uint64_t bytes) {
        s.time = clock.now();
        s.memory_current = bytes;
        auto p = phase.observe(s);
        clock.advance(2s);
        return p;
    };
    for (int i = 0; i < 10; ++i) EXPECT_EQ(at(100 * MiB), WorkerPhase::loading);  // 0-18 s
    EXPECT_EQ(at(130 * MiB), WorkerPhase::loading);  // 20 s covered, but it climbed
    for (int i = 0; i < 9; ++i) EXPECT_EQ(at(130 * MiB), WorkerPhase::loading);  // 22-38 s
    EXPECT_EQ(at(129 * MiB), WorkerPhase::serving);  // 20-40 s within the band of 130
    EXPECT_EQ(phase.why(), "memory settled");
    EXPECT_EQ(at(900 * MiB), WorkerPhase::serving);  // serving stays serving
}

}  // namespace
}  // namespace infervisor
