// The policy engine on recorded traces: sequences of samples fed at the times
// a FakeClock says, checking which decisions come out and when.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "policy/policy_engine.h"
#include "policy/rule_config.h"
#include "support/byte_units.h"
#include "support/fake_clock.h"
#include "support/measurement.h"

namespace infervisor {
namespace {

using namespace std::chrono_literals;

std::vector<RuleSpec> rules(const std::string& yaml, RuleScope scope = RuleScope::worker) {
    ConfigErrors errors;
    auto parsed = parse_rules(YAML::Load(yaml), errors, scope);
    validate_rules(parsed, errors);
    EXPECT_TRUE(errors.empty()) << errors.format();
    return parsed;
}

// Replays samples one second (or `step`) apart and records when decisions come.
class Trace {
  public:
    explicit Trace(PolicyEngine& engine, std::string worker = "llama")
        : engine_(engine), worker_(std::move(worker)) {
        base_.started_at = clock_.now();
        // Ready at once: these traces are about rules on a serving worker
        // (phases: phase_test.cpp).
        base_.signals_readiness = true;
        base_.ready_at = base_.started_at;
        base_.memory_max = 1 * GiB;
        base_.memory_current = 100 * MiB;
    }

    WorkerSample& base() { return base_; }
    FakeClock& clock() { return clock_; }
    Duration elapsed() const { return std::chrono::duration_cast<Duration>(clock_.now() - start_); }

    // Sample now, then advance.
    std::vector<Decision> step(Duration advance = 1s) {
        WorkerSample s = base_;
        s.time = clock_.now();
        auto out = engine_.evaluate(worker_, s, clock_.now(), checkpoint_took);
        for (const auto& d : out) fired_at_.push_back({elapsed(), d});
        clock_.advance(advance);
        return out;
    }

    // Runs `fn(seconds since start)` to shape each sample for `duration`.
    template <class Fn>
    void run(Duration duration, Fn shape, Duration every = 1s) {
        TimePoint end = clock_.now() + duration;
        while (clock_.now() < end) {
            shape(std::chrono::duration_cast<std::chrono::seconds>(elapsed()).count());
            step(every);
        }
    }

    const std::vector<std::pair<Duration, Decision>>& decisions() const { return fired_at_; }

    // How long the worker's last checkpoint took, as the runner says.
    std::optional<Duration> checkpoint_took;

  private:
    PolicyEngine& engine_;
    std::string worker_;
    FakeClock clock_;
    TimePoint start_ = clock_.now();
    WorkerSample base_;
    std::vector<std::pair<Duration, Decision>> fired_at_;
};

TEST(PolicyEngine, LinearLeakUnderACapFires) {
    PolicyEngine engine;
    engine.set_default_rules(rules(R"(
- {name: runaway-growth, when: memory.growth > 15%/min for 10s, action: kill, then: restart})"));
    Trace trace(engine);
    trace.run(50s, [&](long s) { trace.base().memory_current = 100 * MiB + s * 20 * MiB; });
    ASSERT_EQ(trace.decisions().size(), 1u);
    auto& [when, d] = trace.decisions()[0];
    // Growth is known after half the 60 s window, then must hold 10 s.
    EXPECT_EQ(when, 40s);
    EXPECT_EQ(d.worker, "llama");
    EXPECT_EQ(d.rule, "runaway-growth");
    EXPECT_EQ(d.action, Action::kill);
    EXPECT_EQ(d.then, Then::restart);
    EXPECT_FALSE(d.dry_run);
    // 20 MiB/s = 1200 MiB/min of a 1024 MiB cap.
    EXPECT_EQ(measurement(d, "MEMORY_GROWTH_PCT_PER_MIN"), "117.19");
    EXPECT_EQ(measurement(d, "THRESHOLD"), "> 15%/min");
    EXPECT_EQ(measurement(d, "HELD_SECONDS"), "10.000");
    EXPECT_EQ(measurement(d, "MEMORY_CURRENT_BYTES"), std::to_string(900 * MiB));
    EXPECT_EQ(measurement(d, "MEMORY_MAX_BYTES"), std::to_string(GiB));
    EXPECT_EQ(d.reason, "memory.growth is 117.19%/min (> 15%/min) for 10s");
    EXPECT_NEAR(*engine.growth_percent_per_min("llama"), 117.19, 0.01);
}

TEST(PolicyEngine, AShortGrowthWindowStopsA20MiBPerSecondLeakEarly) {
    // The issue's case: 20 MiB/s under a 1 GiB cap, starting from 100 MiB.
    PolicyEngine engine(PolicyOptions{.growth_window = 10s});
    engine.set_default_rules(rules(R"(
- {name: leak, when: memory.growth > 15%/min for 3s, action: kill, then: park})"));
    Trace trace(engine);
    trace.run(30s, [&](long s) { trace.base().memory_current = 100 * MiB + s * 20 * MiB; });
    ASSERT_EQ(trace.decisions().size(), 1u);
    auto& [when, d] = trace.decisions()[0];
    EXPECT_EQ(when, 8s);  // answered after 5 s (half the window), then held 3 s
    EXPECT_EQ(measurement(d, "MEMORY_CURRENT_BYTES"), std::to_string(260 * MiB));
}

// A memory rule's checkpoint before the run ends waits for the save; with
// less memory.headroom than twice the last save took, the run ends without
// it: the kill is not held up. 20 MiB/s from 100 MiB under 1 GiB: at the
// decision (8 s, 260 MiB) the cap is 38.2 s away.
TEST(PolicyEngine, ACheckpointBeforeAKillThatTheHeadroomCannotWaitForIsAKill) {
    auto decide = [](std::optional<Duration> took, const std::string& then) {
        PolicyEngine engine(PolicyOptions{.growth_window = 10s});
        engine.set_default_rules(rules(
            "- {name: leak, when: memory.growth > 15%/min for 3s, action: checkpoint, then: " +
            then + "}"));
        Trace trace(engine);
        trace.checkpoint_took = took;
        trace.run(9s, [&](long s) { trace.base().memory_current = 100 * MiB + s * 20 * MiB; });
        EXPECT_EQ(trace.decisions().size(), 1u) << then;
        return trace.decisions().empty() ? Decision{} : trace.decisions()[0].second;
    };
    Decision slow = decide(30s, "restart");
    EXPECT_EQ(slow.action, Action::kill);
    EXPECT_EQ(slow.then, Then::restart);
    EXPECT_EQ(slow.reason,
              "memory.growth is 117.19%/min (> 15%/min) for 3s; killed without its checkpoint: it "
              "runs out of memory.max in 38s200ms, its last checkpoint took 30s");
    EXPECT_EQ(measurement(slow, "CHECKPOINT_SKIPPED"),
              "it runs out of memory.max in 38s200ms, its last checkpoint took 30s");
    // Time for two saves, or none known: the checkpoint stands.
    EXPECT_EQ(decide(15s, "park").action, Action::checkpoint);
    EXPECT_EQ(decide(std::nullopt, "restart").action, Action::checkpoint);
    // A checkpoint the worker keeps running after ends nothing.
    EXPECT_EQ(decide(30s, "keep_running").action, Action::checkpoint);
}

TEST(PolicyEngine, SetGrowthWindowAppliesToWorkersAlreadyTracked) {
    PolicyEngine engine;
    engine.set_default_rules(rules(R"(
- {name: leak, when: memory.growth > 15%/min for 0s, action: log})"));
    Trace trace(engine);
    trace.run(10s, [&](long s) { trace.base().memory_current = 100 * MiB + s * 20 * MiB; });
    EXPECT_TRUE(trace.decisions().empty()) << "60 s window: no answer after 10 s";
    engine.set_growth_window(10s);
    trace.run(1s, [&](long s) { trace.base().memory_current = 100 * MiB + s * 20 * MiB; });
    EXPECT_EQ(trace.decisions().size(), 1u);
}

TEST(PolicyEngine, FlatWorkerNeverFires) {
    PolicyEngine engine;
    engine.set_default_rules(rules(R"(
- {name: runaway-growth, when: memory.growth > 15%/min for 2m, action: kill})"));
    Trace trace(engine);
    trace.run(10min, [&](long s) { trace.base().memory_current = 500 * MiB + (s % 2) * MiB; });
    EXPECT_TRUE(trace.decisions().empty());
}

TEST(PolicyEngine, WorkerThatGrewOnceThenStabilisedDoesNotFire) {
    PolicyEngine engine;
    engine.set_default_rules(rules(R"(
- {name: runaway-growth, when: memory.growth > 15%/min for 2m, action: kill})"));
    Trace trace(engine);
    // Loads a 500 MiB model over 10 s, then serves at a flat footprint.
    trace.run(10min, [&](long s) {
        trace.base().memory_current =
            100 * MiB + std::min<long>(std::max<long>(s - 30, 0), 10) * 50 * MiB;
    });
    EXPECT_TRUE(trace.decisions().empty());
    EXPECT_DOUBLE_EQ(*engine.growth_percent_per_min("llama"), 0.0) << "the jump left the window";
}

TEST(PolicyEngine, PressureMustHoldAndOneGoodSampleBreaksIt) {
    PolicyEngine engine;
    engine.set_default_rules(rules(R"(
- {name: pressure, when: memory.pressure.some.avg10 > 40% for 10s, action: log})"));
    Trace trace(engine);
    auto psi = [&](double avg10) {
        trace.base().memory_pressure = PsiReading{{avg10, 0, 0, 0}, {}};
    };
    // 50 % for 8 s, one 30 % sample, then 50 %: fires 10 s after the good sample.
    trace.run(30s, [&](long s) { psi(s == 8 ? 30.0 : 50.0); });
    ASSERT_EQ(trace.decisions().size(), 1u);
    EXPECT_EQ(trace.decisions()[0].first, 19s);
    EXPECT_EQ(measurement(trace.decisions()[0].second, "MEMORY_PRESSURE_SOME_AVG10_PCT"), "50.00");
}

TEST(PolicyEngine, NoRefireUntilTheConditionClears) {
    PolicyEngine engine;
    engine.set_default_rules(rules(R"(
- {name: pressure, when: memory.pressure.some.avg10 > 40% for 10s, action: log})"));
    Trace trace(engine);
    auto psi = [&](double avg10) {
        trace.base().memory_pressure = PsiReading{{avg10, 0, 0, 0}, {}};
    };
    trace.run(2min, [&](long) { psi(60.0); });
    EXPECT_EQ(trace.decisions().size(), 1u) << "held for two minutes, fired once";
    trace.run(5s, [&](long) { psi(10.0); });
    trace.run(30s, [&](long) { psi(60.0); });
    ASSERT_EQ(trace.decisions().size(), 2u);
    EXPECT_EQ(trace.decisions()[1].first, 135s) << "re-armed, then held 10 s afresh";
}

TEST(PolicyEngine, CooldownRepeatsWhileTrue) {
    PolicyEngine engine;
    engine.set_default_rules(rules(R"(
- {name: pressure, when: memory.pressure.some.avg10 > 40%, action: log, cooldown: 1m})"));
    Trace trace(engine);
    trace.base().memory_pressure = PsiReading{{60, 0, 0, 0}, {}};
    trace.run(150s, [](long) {});
    ASSERT_EQ(trace.decisions().size(), 3u);
    EXPECT_EQ(trace.decisions()[1].first, 60s);
    EXPECT_EQ(trace.decisions()[1].second.step, RuleStep::repeat);
    EXPECT_EQ(trace.decisions()[2].first, 120s);
}

TEST(PolicyEngine, MissingMeasurementIsFalse) {
    PolicyEngine engine;
    engine.set_default_rules(rules(R"(
- {name: pressure, when: memory.pressure.some.avg10 > 40% for 5s, action: log})"));
    Trace trace(engine);
    trace.run(10s, [&](long s) {
        if (s == 3)
            trace.base().memory_pressure.reset();
        else
            trace.base().memory_pressure = PsiReading{{60, 0, 0, 0}, {}};
    });
    ASSERT_EQ(trace.decisions().size(), 1u);
    EXPECT_EQ(trace.decisions()[0].first, 9s);
}

TEST(PolicyEngine, HeartbeatMissed) {
    PolicyEngine engine;
    engine.set_default_rules(rules("- {name: stuck, when: heartbeat missed, action: kill}"));
    Trace trace(engine);
    trace.base().watchdog_interval = 30s;
    // Pings every 10 s until 60 s, then silence (the infinite-loop case).
    trace.run(2min, [&](long s) {
        if (s % 10 == 0 && s <= 60) trace.base().last_heartbeat = trace.clock().now();
    });
    ASSERT_EQ(trace.decisions().size(), 1u);
    auto& [when, d] = trace.decisions()[0];
    EXPECT_EQ(when, 91s);
    EXPECT_EQ(d.action, Action::kill);
    EXPECT_EQ(d.then, Then::worker_policy);
    EXPECT_EQ(measurement(d, "HEARTBEAT_MISSED"), "1");
    EXPECT_EQ(measurement(d, "HEARTBEAT_AGE_SECONDS"), "31.000");
    EXPECT_EQ(measurement(d, "WATCHDOG_SECONDS"), "30.000");
    EXPECT_EQ(d.reason, "heartbeat missed");
}

TEST(PolicyEngine, HeartbeatNeverSentCountsFromStart) {
    PolicyEngine engine;
    engine.set_default_rules(rules("- {name: stuck, when: heartbeat missed, action: kill}"));
    Trace trace(engine);
    trace.base().watchdog_interval = 30s;
    trace.run(40s, [](long) {});
    ASSERT_EQ(trace.decisions().size(), 1u);
    EXPECT_EQ(trace.decisions()[0].first, 31s);
}

TEST(PolicyEngine, WorkerWithoutWatchdogNeverMissesHeartbeats) {
    PolicyEngine engine;
    engine.set_default_rules(rules("- {name: stuck, when: heartbeat missed, action: kill}"));
    Trace trace(engine);
    trace.run(
        5min, [](long) {}, 10s);
    EXPECT_TRUE(trace.decisions().empty());
}

TEST(PolicyEngine, RuntimeLimit) {
    PolicyEngine engine;
    engine.set_default_rules(
        rules("- {name: too-long, when: runtime > 2h, action: kill, then: park}"));
    Trace trace(engine);
    trace.run(
        2h + 1min, [](long) {}, 30s);
    ASSERT_EQ(trace.decisions().size(), 1u);
    EXPECT_EQ(trace.decisions()[0].first, 2h + 30s);
    EXPECT_EQ(trace.decisions()[0].second.then, Then::park);
    EXPECT_EQ(measurement(trace.decisions()[0].second, "RUNTIME_SECONDS"), "7230.000");
}

TEST(PolicyEngine, CpuTimeBudget) {
    PolicyEngine engine;
    engine.set_default_rules(rules(R"(
- {name: cpu-budget, when: cpu.time > 1h, action: kill}
- {name: spinning, when: cpu.usage > 95% for 1m, action: log})"));
    Trace trace(engine);
    // Two busy cores: 2 s of CPU per second of wall time.
    trace.run(
        31min, [&](long s) { trace.base().cpu_usage_usec = uint64_t(s) * 2'000'000; }, 10s);
    ASSERT_EQ(trace.decisions().size(), 2u);
    EXPECT_EQ(trace.decisions()[0].second.rule, "spinning");
    EXPECT_EQ(trace.decisions()[0].first, 70s) << "usage known from the second sample, held 1 min";
    EXPECT_EQ(measurement(trace.decisions()[0].second, "CPU_USAGE_PCT"), "200.00");
    EXPECT_EQ(trace.decisions()[1].second.rule, "cpu-budget");
    EXPECT_EQ(trace.decisions()[1].first, 30min + 10s);
}

TEST(PolicyEngine, SustainedSwapInFires) {
    PolicyEngine engine;
    engine.set_default_rules(rules("- {name: thrash, when: swap.in > 0 for 30s, action: kill}"));
    Trace trace(engine);
    uint64_t pages = 0;
    // Swapping in for 20 s, one quiet interval, then steadily.
    trace.run(
        80s,
        [&](long s) {
            if (s != 21) pages += 50;
            trace.base().swapin_pages = pages;
        },
        1s);
    ASSERT_EQ(trace.decisions().size(), 1u);
    EXPECT_EQ(trace.decisions()[0].first, 52s);
    EXPECT_EQ(measurement(trace.decisions()[0].second, "SWAP_IN_PAGES_PER_SEC"), "50.0");
}

TEST(PolicyEngine, EscalationLadder) {
    PolicyEngine engine;
    engine.set_default_rules(rules(R"(
- name: pressure
  when: memory.pressure.some.avg10 > 40% for 10s
  action: throttle
  throttle_to: 80%
  escalate_after: 30s
  escalate_to: kill
  then: restart)"));
    Trace trace(engine);
    trace.base().memory_pressure = PsiReading{{60, 0, 0, 0}, {}};
    trace.run(2min, [](long) {});
    ASSERT_EQ(trace.decisions().size(), 2u);
    auto& [t1, throttle] = trace.decisions()[0];
    EXPECT_EQ(t1, 10s);
    EXPECT_EQ(throttle.action, Action::throttle);
    EXPECT_EQ(throttle.step, RuleStep::fire);
    EXPECT_EQ(throttle.memory_high, uint64_t(0.8 * GiB)) << "80% of memory.max: no memory.high set";
    auto& [t2, kill] = trace.decisions()[1];
    EXPECT_EQ(t2, 40s);
    EXPECT_EQ(kill.action, Action::kill);
    EXPECT_EQ(kill.step, RuleStep::escalate);
    EXPECT_EQ(kill.then, Then::restart);
    EXPECT_EQ(kill.reason.rfind("still true 30s after throttle: ", 0), 0u) << kill.reason;
    EXPECT_FALSE(kill.memory_high);
}

TEST(PolicyEngine, ThrottleLowersAnExistingMemoryHigh) {
    PolicyEngine engine;
    engine.set_default_rules(rules(R"(
- {name: p, when: memory.current > 50%, action: throttle, throttle_to: 50%, cooldown: 10s})"));
    Trace trace(engine);
    trace.base().memory_current = 700 * MiB;
    trace.base().memory_high = 800 * MiB;
    auto first = trace.step();
    ASSERT_EQ(first.size(), 1u);
    EXPECT_EQ(first[0].memory_high, 400 * MiB);
}

TEST(PolicyEngine, EscalationIsCancelledWhenTheConditionClears) {
    PolicyEngine engine;
    engine.set_default_rules(rules(R"(
- {name: p, when: memory.pressure.some.avg10 > 40%, action: throttle, escalate_after: 30s, escalate_to: kill})"));
    Trace trace(engine);
    trace.run(60s, [&](long s) {
        trace.base().memory_pressure = PsiReading{{s == 20 ? 5.0 : 60.0, 0, 0, 0}, {}};
    });
    ASSERT_EQ(trace.decisions().size(), 3u);
    EXPECT_EQ(trace.decisions()[0].second.action, Action::throttle);
    EXPECT_EQ(trace.decisions()[1].first, 21s);
    EXPECT_EQ(trace.decisions()[1].second.action, Action::throttle);
    EXPECT_EQ(trace.decisions()[2].first, 51s);
    EXPECT_EQ(trace.decisions()[2].second.action, Action::kill);
}

TEST(PolicyEngine, ForgetStartsTheWorkerAfresh) {
    PolicyEngine engine;
    engine.set_default_rules(rules("- {name: oom, when: memory.events.oom_kill > 0, action: log}"));
    Trace trace(engine);
    // A cgroup that already counted 3 OOM kills before the engine watched it.
    trace.base().memory_events = MemoryEvents{0, 0, 0, 3, 3, 0};
    trace.run(5s, [](long) {});
    EXPECT_TRUE(trace.decisions().empty()) << "events count from the first sample";
    trace.base().memory_events->oom_kill = 4;
    trace.run(5s, [](long) {});
    ASSERT_EQ(trace.decisions().size(), 1u);
    EXPECT_EQ(measurement(trace.decisions()[0].second, "MEMORY_EVENTS_OOM_KILL"), "1");
    engine.forget("llama");
    trace.run(5s, [](long) {});
    EXPECT_EQ(trace.decisions().size(), 1u) << "after forget(), 4 is the new baseline";
}

TEST(PolicyEngine, DryRunMarksDecisionsAndKeepsTiming) {
    PolicyEngine engine(PolicyOptions{.dry_run = true});
    engine.set_default_rules(rules("- {name: too-long, when: runtime > 10s, action: kill}"));
    Trace trace(engine);
    trace.run(60s, [](long) {});
    ASSERT_EQ(trace.decisions().size(), 1u) << "latched as if the kill had happened";
    EXPECT_TRUE(trace.decisions()[0].second.dry_run);

    PolicyEngine per_rule;
    per_rule.set_default_rules(rules(R"(
- {name: a, when: runtime > 10s, action: kill, dry_run: true}
- {name: b, when: runtime > 10s, action: log})"));
    Trace trace2(per_rule);
    trace2.run(12s, [](long) {});
    ASSERT_EQ(trace2.decisions().size(), 2u);
    EXPECT_TRUE(trace2.decisions()[0].second.dry_run);
    EXPECT_FALSE(trace2.decisions()[1].second.dry_run);
}

TEST(PolicyEngine, WorkerRulesMergeWithDefaults) {
    PolicyEngine engine;
    engine.set_default_rules(rules(R"(
- {name: stuck, when: heartbeat missed, action: kill}
- {name: long, when: runtime > 1h, action: log})"));
    engine.set_worker_rules("whisper", rules(R"(
- {name: stuck, enabled: false}
- {name: short, when: runtime > 10s, action: kill})"));
    ASSERT_EQ(engine.rules_for("whisper").size(), 2u);
    EXPECT_EQ(engine.rules_for("whisper")[0].name, "long");
    EXPECT_EQ(engine.rules_for("whisper")[1].name, "short");
    EXPECT_EQ(engine.rules_for("llama").size(), 2u);
    Trace trace(engine, "whisper");
    trace.base().watchdog_interval = 5s;
    trace.run(20s, [](long) {});
    ASSERT_EQ(trace.decisions().size(), 1u);
    EXPECT_EQ(trace.decisions()[0].second.rule, "short");
    engine.remove_worker("whisper");
    EXPECT_EQ(engine.rules_for("whisper")[0].name, "stuck");
}

// Host rules: the host sample decides, a victim pays.
class HostPolicy : public ::testing::Test {
  protected:
    void SetUp() override {
        engine.set_host_rules(rules(R"(
- {name: low-memory, when: host.mem.available < 5%, action: kill, then: park})",
                                    RuleScope::host));
    }
    void worker(const std::string& name, uint64_t memory, uint64_t grown = 0) {
        WorkerSample s;
        s.time = clock.now() - 60s;
        s.signals_readiness = true;  // serving: its growth is measured
        s.ready_at = s.time;
        s.memory_current = memory;
        engine.evaluate(name, s, s.time);
        s.time = clock.now();
        s.memory_current = memory + grown;
        engine.evaluate(name, s, s.time);
    }
    // Host rules from `yaml` over workers "a" (larger) and "b", with `settle`.
    void two_workers_under(const std::string& yaml, Duration settle) {
        engine.set_host_rules(rules(yaml, RuleScope::host));
        engine.set_host_settle(settle);
        worker("a", 2 * GiB);
        worker("b", 1 * GiB);
    }
    static constexpr const char* kThrashKill =
        "- {name: thrash, when: host.swap.in > 50 for 5s, action: kill, then: park}";
    std::vector<Decision> host(uint64_t available, const std::vector<WorkerCandidate>& candidates) {
        HostSample h;
        h.time = clock.now();
        h.mem_total = 100 * GiB;
        h.mem_available = available;
        return engine.evaluate_host(h, candidates, clock.now());
    }

    PolicyEngine engine;
    FakeClock clock;
};

// A host rule's checkpoint before a park: a kill when host.mem.headroom is
// under twice the victim's last checkpoint, as for a worker rule.
TEST_F(HostPolicy, ACheckpointTheHostCannotWaitForIsAKill) {
    auto decide = [this](Duration took) {
        PolicyEngine fresh;
        fresh.set_host_rules(
            rules("- {name: low, when: host.mem.available < 5%, action: checkpoint, then: park}",
                  RuleScope::host));
        std::vector<WorkerCandidate> a{{"a", 10, false, PreemptFacts{true, "", took}}};
        HostSample h;
        h.mem_total = 100 * GiB;
        h.time = clock.now();
        h.mem_available = 5 * GiB;
        EXPECT_TRUE(fresh.evaluate_host(h, a, h.time).empty());
        h.time += 1s;  // 1 GiB a second: 4 s left
        h.mem_available = 4 * GiB;
        auto out = fresh.evaluate_host(h, a, h.time);
        EXPECT_EQ(out.size(), 1u);
        return out.empty() ? Decision{} : out[0];
    };
    Decision slow = decide(10s);
    EXPECT_EQ(slow.action, Action::kill);
    EXPECT_EQ(slow.then, Then::park);
    EXPECT_EQ(measurement(slow, "CHECKPOINT_SKIPPED"),
              "the host runs out in 4s, its last checkpoint took 10s");
    EXPECT_EQ(decide(1s).action, Action::checkpoint);
}

TEST_F(HostPolicy, PicksByPriorityThenRunawayGrowthThenMemory) {
    worker("important", 40 * GiB);
    worker("big", 20 * GiB);
    worker("growing", 10 * GiB, 2 * 1024 * 1024);  // 2 MiB: noise, not a runaway
    worker("steady", 12 * GiB);
    worker("vault", 60 * GiB);
    std::vector<WorkerCandidate> all{{"important", 10, false},
                                     {"big", 0, false},
                                     {"growing", 0, false},
                                     {"steady", 0, false},
                                     {"vault", -10, true}};
    auto out = host(2 * GiB, all);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].worker, "big");
    EXPECT_EQ(out[0].scope, RuleScope::host);
    EXPECT_EQ(out[0].action, Action::kill);
    EXPECT_EQ(out[0].then, Then::park);
    EXPECT_EQ(measurement(out[0], "HOST_MEM_AVAILABLE_PCT"), "2.00");
    EXPECT_EQ(measurement(out[0], "HOST_MEM_AVAILABLE_BYTES"), std::to_string(2 * GiB));
    EXPECT_EQ(measurement(out[0], "VICTIM_PRIORITY"), "0");
    EXPECT_EQ(measurement(out[0], "MEMORY_CURRENT_BYTES"), std::to_string(20 * GiB));
    EXPECT_NE(out[0].reason.find("victim 'big'"), std::string::npos) << out[0].reason;

    // A runaway (1 GiB more since the last sample) goes before a larger
    // worker that holds still.
    clock.advance(1min);
    worker("a", 12 * GiB, 0);
    worker("b", 11 * GiB, 1 * GiB);
    host(50 * GiB, all);  // clears the rule
    out = host(1 * GiB, {{"a", 0, false}, {"b", 0, false}});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].worker, "b");

    // Same memory, both below the runaway floor: the faster grower.
    clock.advance(1min);
    worker("c", 12 * GiB, 1024 * 1024);
    worker("d", 12 * GiB, 2 * 1024 * 1024);
    host(50 * GiB, all);
    out = host(1 * GiB, {{"c", 0, false}, {"d", 0, false}});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].worker, "d");
}

TEST_F(HostPolicy, NeverAProtectedWorker) {
    worker("vault", 60 * GiB);
    EXPECT_TRUE(host(1 * GiB, {{"vault", 0, true}}).empty());
    EXPECT_TRUE(host(1 * GiB, {}).empty());
    // The step stays due: a killable worker appearing is chosen at once.
    worker("late", 1 * GiB);
    auto out = host(1 * GiB, {{"vault", 0, true}, {"late", 5, false}});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].worker, "late");
}

TEST_F(HostPolicy, LogRulesReportEvenWithoutVictim) {
    engine.set_host_rules(
        rules("- {name: note, when: host.mem.available < 5%, action: log}", RuleScope::host));
    auto out = host(1 * GiB, {{"vault", 0, true}});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].worker, "");
    EXPECT_EQ(out[0].action, Action::log);
}

TEST_F(HostPolicy, SwapRateAndEscalationKeepTheVictim) {
    engine.set_host_rules(rules(R"(
- {name: thrash, when: host.swap.in > 0 for 10s, action: throttle, escalate_after: 20s, escalate_to: kill})",
                                RuleScope::host));
    worker("a", 2 * GiB);
    worker("b", 1 * GiB);
    std::vector<Decision> out;
    for (int s = 0; s <= 40; ++s) {
        HostSample h;
        h.time = clock.now();
        h.pswpin = uint64_t(s) * 100;
        // b grows past a after the throttle: the escalation still hits a.
        if (s == 15) worker("b", 5 * GiB);
        for (auto& d : engine.evaluate_host(h, {{"a", 0, false}, {"b", 0, false}}, clock.now()))
            out.push_back(d);
        clock.advance(1s);
    }
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].action, Action::throttle);
    EXPECT_EQ(out[0].worker, "a");
    EXPECT_EQ(measurement(out[0], "HOST_SWAP_IN_PAGES_PER_SEC"), "100.0");
    EXPECT_EQ(out[1].action, Action::kill);
    EXPECT_EQ(out[1].worker, "a");
}

// A host whose swap-in runs at 100 pages/s for `seconds`, except for the
// seconds in `quiet`; workers "a" (larger) and "b" are the candidates until
// one is killed. Returns each decision with the second it came at.
std::vector<std::pair<int, Decision>> swap_trace(PolicyEngine& engine, FakeClock& clock,
                                                 int seconds, std::set<int> quiet) {
    std::vector<std::pair<int, Decision>> out;
    std::vector<WorkerCandidate> candidates{{"a", 0, false}, {"b", 0, false}};
    uint64_t pages = 0;
    for (int s = 0; s <= seconds; ++s) {
        if (!quiet.count(s)) pages += 100;
        HostSample h;
        h.time = clock.now();
        h.pswpin = pages;
        for (auto& d : engine.evaluate_host(h, candidates, clock.now())) {
            if (d.action == Action::kill)
                std::erase_if(candidates,
                              [&](const WorkerCandidate& c) { return c.name == d.worker; });
            out.emplace_back(s, d);
        }
        clock.advance(1s);
    }
    return out;
}

TEST_F(HostPolicy, AfterAKillHostRulesSettleBeforeTheNextVictim) {
    two_workers_under(kThrashKill, 30s);
    // The rate is known from second 1, so the rule fires at 6. Swap-in dips
    // once after the kill (the rule re-arms) and goes on: the survivors
    // paging back in. Without the settle b would go at second 14.
    auto out = swap_trace(engine, clock, 60, {8});
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].first, 6);
    EXPECT_EQ(out[0].second.worker, "a");
    EXPECT_EQ(measurement(out[0].second, "HOST_SETTLE_MS"), "30000");
    EXPECT_EQ(out[1].first, 41);  // the settle ends at 36, then `for 5s`
    EXPECT_EQ(out[1].second.worker, "b");
}

TEST_F(HostPolicy, WithoutSettleTheNextVictimGoesAsSoonAsTheRuleHoldsAgain) {
    two_workers_under(kThrashKill, 0s);
    auto out = swap_trace(engine, clock, 60, {8});
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].first, 6);
    EXPECT_EQ(measurement(out[0].second, "HOST_SETTLE_MS"), "<absent>");
    EXPECT_EQ(out[1].first, 14);
    EXPECT_EQ(out[1].second.worker, "b");
}

TEST_F(HostPolicy, AnEscalationStillClimbsWhileTheHostSettles) {
    two_workers_under(R"(
- {name: thrash, when: host.swap.in > 50 for 5s, action: checkpoint, escalate_after: 10s, escalate_to: kill})",
                      30s);
    auto out = swap_trace(engine, clock, 30, {});
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].first, 6);
    EXPECT_EQ(out[0].second.action, Action::checkpoint);
    EXPECT_EQ(out[0].second.worker, "a");
    EXPECT_EQ(out[1].first, 16);
    EXPECT_EQ(out[1].second.action, Action::kill);
    EXPECT_EQ(out[1].second.worker, "a");
}

// After a resume the worker pages back in: for host_settle a swap-in rule
// does not count it as thrashing, but MemAvailable running out is acted on
// at once (a resumed leak must not be left to the kernel's OOM killer).
TEST_F(HostPolicy, AfterAResumeOnlyTheThrashSignalsAreDiscounted) {
    two_workers_under(R"(
- {name: thrash, when: host.swap.in > 50 for 5s, action: kill}
- {name: out, when: host.mem.available < 5%, action: kill})",
                      30s);
    engine.resumed(clock.now());
    // Paging back in for 20s, with room: no action.
    auto out = swap_trace(engine, clock, 20, {});
    EXPECT_TRUE(out.empty());
    // Still within host_settle, the host runs out: acted on at once.
    auto now = host(1 * GiB, {{"a", 0, false}, {"b", 0, false}});
    ASSERT_EQ(now.size(), 1u);
    EXPECT_EQ(now[0].rule, "out");
    // Once host_settle (after the resume, and after that kill) has passed,
    // swap-in counts again.
    host(50 * GiB, {{"a", 0, false}, {"b", 0, false}});
    clock.advance(60s);
    out = swap_trace(engine, clock, 10, {});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].second.rule, "thrash");
}

TEST_F(HostPolicy, ThrottlingDoesNotMakeTheHostSettle) {
    two_workers_under(R"(
- {name: squeeze, when: host.swap.in > 50 for 5s, action: throttle}
- {name: thrash, when: host.swap.in > 50 for 8s, action: kill})",
                      30s);
    auto out = swap_trace(engine, clock, 20, {});
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].first, 6);
    EXPECT_EQ(out[0].second.action, Action::throttle);
    EXPECT_EQ(out[1].first, 9);
    EXPECT_EQ(out[1].second.action, Action::kill);
}

// A compound condition: the whole expression holds for its one `for`; the
// decision shows every comparison with its value and journals each metric
// and the expression.
TEST(PolicyEngine, ACompoundConditionHoldsAsAWholeForItsFor) {
    PolicyEngine engine;
    engine.set_default_rules(
        rules("- {name: hot, when: memory.current > 50% and memory.pressure.some.avg10 > 10% or "
              "memory.current > 90% for 3s, action: kill}"));
    Trace trace(engine);
    trace.base().memory_current = 600 * MiB;  // > 50%, no pressure reading: false
    trace.run(5s, [](long) {});
    EXPECT_TRUE(trace.decisions().empty());
    PsiReading psi;
    psi.some.avg10 = 20.0;
    trace.base().memory_pressure = psi;
    trace.run(2s, [](long) {});
    EXPECT_TRUE(trace.decisions().empty()) << "held 1s of 3s";
    trace.base().memory_pressure.reset();  // false again: the clock stops
    trace.step();
    trace.base().memory_current = 950 * MiB;  // the other branch alone
    trace.run(5s, [](long) {});
    ASSERT_EQ(trace.decisions().size(), 1u);
    const Decision& d = trace.decisions()[0].second;
    EXPECT_EQ(trace.decisions()[0].first, 11s);
    EXPECT_EQ(d.reason,
              "memory.current is 92.77% (> 50%) and memory.pressure.some.avg10 is unknown (> 10%) "
              "or memory.current is 92.77% (> 90%) for 3s");
    EXPECT_EQ(measurement(d, "MEMORY_CURRENT_PCT"), "92.77");
    EXPECT_EQ(measurement(d, "CONDITION"),
              "memory.current > 50% and memory.pressure.some.avg10 > 10% or memory.current > 90%");
    EXPECT_EQ(measurement(d, "THRESHOLD"), "<absent>");
    EXPECT_TRUE(d.for_memory);
}

// Case 1 of issue 25 in the engine: the batch job never settles (no
// readiness, still loading), yet it is the one growing, and it is chosen.
TEST_F(HostPolicy, TheLoadingGrowerGoesBeforeTheSteadyLargerServer) {
    engine.set_host_rules(
        rules("- {name: low, when: host.mem.available < 10%, action: kill}", RuleScope::host));
    const TimePoint batch_start = clock.now() - 2s;
    for (int i = 0; i <= 12; ++i) {
        WorkerSample server;
        server.time = clock.now();
        server.signals_readiness = true;
        server.ready_at = server.time - 10min;
        server.memory_current = 380 * MiB;
        server.memory_anon = 368 * MiB;
        engine.evaluate("server", server, clock.now());
        WorkerSample batch;
        batch.time = clock.now();
        batch.started_at = batch_start;  // no readiness signal: loading while it grows
        batch.memory_current = (40 + 20 * i) * MiB;
        batch.memory_anon = (36 + 20 * i) * MiB;
        engine.evaluate("batch", batch, clock.now());
        if (i < 12) clock.advance(1s);
    }
    ASSERT_EQ(engine.phase_of("batch"), WorkerPhase::loading);
    auto out = host(5 * GiB, {{"server", 0, false}, {"batch", 0, false}});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].worker, "batch");
    EXPECT_EQ(measurement(out[0], "PHASE"), "loading");
    EXPECT_EQ(measurement(out[0], "VICTIM_REASON"),
              "growing 20.0 MiB/s (anon 276.0 MiB); others: server +0.0 MiB/s 368.0 MiB");
    EXPECT_EQ(measurement(out[0], "VICTIM_GROWTH_BYTES_PER_SEC"), std::to_string(20 * MiB));
    EXPECT_EQ(measurement(out[0], "VICTIM_ANON_BYTES"), std::to_string(276 * MiB));
    EXPECT_NE(out[0].reason.find("victim 'batch' (priority 0): growing 20.0 MiB/s"),
              std::string::npos)
        << out[0].reason;
}

// Issue 30: a host rule on the GPUs alone picks among the workers on the card
// that runs short, by what they hold there and how fast their GPU memory
// grows (loading too), not by their RAM; a worker that holds nothing there
// is no candidate, however large.
TEST_F(HostPolicy, AHostGpuRulePicksOnTheTightCard) {
    engine.set_host_rules(rules(
        "- {name: gpu-full, when: host.gpu.memory.available < 2G, action: kill}", RuleScope::host));
    const std::string tight = "0000:03:00.0", other = "0000:04:00.0";
    auto gpu_worker = [this](const std::string& name, uint64_t ram,
                             std::vector<WorkerGpuDeviceUse> on, bool loading = false) {
        WorkerSample s;
        s.time = clock.now();
        if (!loading) {
            s.signals_readiness = true;
            s.ready_at = s.time - 10min;
        } else {
            s.started_at = s.time - 5s;
        }
        s.memory_current = ram;
        uint64_t total = 0;
        for (const auto& d : on) total += d.memory;
        s.gpu_memory = total;
        s.gpu_devices = std::move(on);
        engine.evaluate(name, s, s.time);
    };
    for (int i = 0; i <= 10; ++i) {
        gpu_worker("ram-giant", 60 * GiB, {{other, 70 * GiB}});
        gpu_worker("server", 4 * GiB, {{tight, 50 * GiB}});
        // Loading its second model onto the tight card: 1 GiB a second.
        gpu_worker("loader", 2 * GiB, {{tight, (10 + i) * GiB}}, true);
        gpu_worker("cpu-only", 80 * GiB, {});
        if (i < 10) clock.advance(1s);
    }
    HostSample h;
    h.time = clock.now();
    h.mem_total = 256 * GiB;
    h.mem_available = 100 * GiB;
    h.gpu_memory_total = 80 * GiB;
    h.gpu_memory_available = 1 * GiB;
    h.gpu_device = tight;
    std::vector<WorkerCandidate> all{{"ram-giant", 0, false},
                                     {"server", 0, false},
                                     {"loader", 0, false},
                                     {"cpu-only", 0, false}};
    auto out = engine.evaluate_host(h, all, clock.now());
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].worker, "loader");
    EXPECT_TRUE(out[0].for_gpu);
    EXPECT_EQ(measurement(out[0], "VICTIM_REASON"),
              "growing 1024.0 MiB/s (GPU memory on 0000:03:00.0 20480.0 MiB); others: server "
              "+0.0 MiB/s 51200.0 MiB");
    EXPECT_EQ(measurement(out[0], "VICTIM_GROWTH_BYTES_PER_SEC"), std::to_string(1 * GiB));

    // Nobody grows: the largest holder on that card, not the RAM giant.
    clock.advance(1min);
    for (int i = 0; i <= 10; ++i) {
        gpu_worker("ram-giant", 60 * GiB, {{other, 70 * GiB}});
        gpu_worker("server", 4 * GiB, {{tight, 50 * GiB}});
        gpu_worker("loader", 2 * GiB, {{tight, 20 * GiB}});
        if (i < 10) clock.advance(1s);
    }
    h.time = clock.now();
    h.gpu_memory_available = 10 * GiB;
    engine.evaluate_host(h, all, clock.now());  // clears the rule
    h.gpu_memory_available = 1 * GiB;
    out = engine.evaluate_host(h, all, clock.now());
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].worker, "server");

    // Only a stranger's process holds the card: no victim, the step stays due.
    h.gpu_memory_available = 10 * GiB;
    engine.evaluate_host(h, all, clock.now());
    h.gpu_memory_available = 1 * GiB;
    EXPECT_TRUE(
        engine.evaluate_host(h, {{"ram-giant", 0, false}, {"cpu-only", 0, false}}, clock.now())
            .empty());
}

// A host rule on the GPUs alone does not act for the host's memory: its
// suspension may move GPU memory into host memory (supervise/
// worker_gpu_release.h) and a run it ends restarts without waiting for RAM;
// one that reads host memory too does.
TEST_F(HostPolicy, AHostRuleOnTheGpusAloneIsNotForMemory) {
    two_workers_under(
        "- {name: gpu-full, when: host.gpu.memory.available < 1G, action: suspend}\n"
        "- {name: both, when: host.gpu.memory.available < 1G and host.mem.available "
        "< 50%, action: suspend}",
        0s);
    WorkerSample on_card;  // "a" holds memory on the card: the GPU rule's victim
    on_card.time = clock.now();
    on_card.memory_current = 2 * GiB;
    on_card.gpu_memory = 40 * GiB;
    on_card.gpu_devices = {{"0000:03:00.0", 40 * GiB}};
    engine.evaluate("a", on_card, clock.now());
    HostSample h;
    h.time = clock.now();
    h.mem_total = 100 * GiB;
    h.mem_available = 10 * GiB;
    h.gpu_memory_total = 80 * GiB;
    h.gpu_memory_available = 512 * MiB;
    h.gpu_device = "0000:03:00.0";
    auto out = engine.evaluate_host(h, {{"a", 0, false}, {"b", 0, false}}, clock.now());
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].rule, "gpu-full");
    EXPECT_FALSE(out[0].for_memory);
    EXPECT_TRUE(out[0].for_gpu);
    EXPECT_EQ(out[1].rule, "both");
    EXPECT_TRUE(out[1].for_memory);
}

// host.mem.headroom in the engine: MemAvailable over the rate it fell in
// the last 2 s; empty once it holds still.
TEST_F(HostPolicy, HostHeadroomFollowsTheRecentFall) {
    engine.set_host_rules(rules(
        "- {name: falling, when: host.mem.available < 50% and host.mem.headroom < 30s for 2s, "
        "action: log}",
        RuleScope::host));
    std::vector<Decision> out;
    for (uint64_t avail : {45, 45, 45, 43, 41, 39, 37, 37, 37}) {  // GiB of 100
        auto d = host(avail * GiB, {});
        out.insert(out.end(), d.begin(), d.end());
        clock.advance(1s);
    }
    // Falling 2 GiB/s over the last 2 s from the 5th sample (41 GiB: 20.5 s
    // left) to the 7th: held 2 s there; the 8th falls only 1 GiB/s.
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(measurement(out[0], "HOST_MEM_HEADROOM_SECONDS"), "18.500");
    EXPECT_EQ(measurement(out[0], "CONDITION"),
              "host.mem.available < 50% and host.mem.headroom < 30s");
    EXPECT_EQ(out[0].reason,
              "host.mem.available is 37.00% (< 50%) and host.mem.headroom is 18s500ms (< 30s) "
              "for 2s");
}

// Issue 29: a server that answers /health but is stuck (tokens flat, requests
// in flight) is caught by its own metrics; the `for` binds to the whole
// condition, and a sample without a reading (a failed or late scrape) breaks it.
TEST(PolicyEngine, TheStuckServerRuleOnEngineMetrics) {
    PolicyEngine engine;
    engine.set_default_rules(
        rules("- {name: stuck, when: engine.rate(llamacpp:tokens_predicted_total) == 0 and "
              "engine.llamacpp:requests_processing > 0 for 10s, action: kill}"));
    Trace trace(engine);
    double tokens = 0;
    double processing = 1;
    bool scraped = true;
    auto shape = [&](long) {
        if (scraped)
            trace.base().engine = EngineReading{trace.clock().now(),
                                                {{"llamacpp:tokens_predicted_total", tokens},
                                                 {"llamacpp:requests_processing", processing}}};
        else
            trace.base().engine.reset();
    };
    trace.run(20s, [&](long t) {
        tokens += 30;  // generating: a rate of 30/s
        shape(t);
    });
    EXPECT_TRUE(trace.decisions().empty());
    trace.run(6s, shape);  // flat, with a request in flight: held 5s of 10s
    scraped = false;
    trace.run(1s, shape);  // one failed scrape: the condition is false, its clock stops
    scraped = true;
    trace.run(9s, shape);  // held 8s again (compared with the last reading before the gap)
    EXPECT_TRUE(trace.decisions().empty());
    processing = 0;
    trace.run(5s, shape);  // idle, not stuck
    EXPECT_TRUE(trace.decisions().empty());
    processing = 2;
    trace.run(12s, shape);
    ASSERT_EQ(trace.decisions().size(), 1u);
    const Decision& d = trace.decisions()[0].second;
    EXPECT_EQ(d.reason,
              "engine.rate(llamacpp:tokens_predicted_total) is 0 (== 0) and "
              "engine.llamacpp:requests_processing is 2 (> 0) for 10s");
    EXPECT_EQ(measurement(d, "ENGINE_LLAMACPP_TOKENS_PREDICTED_TOTAL_PER_SEC"), "0");
    EXPECT_EQ(measurement(d, "ENGINE_LLAMACPP_REQUESTS_PROCESSING"), "2");
    EXPECT_FALSE(d.for_memory);
}

TEST(PolicyEngine, AWakeUpBetweenScrapesReadsTheSameReadingAndRate) {
    PolicyEngine engine;
    engine.set_default_rules(
        rules("- {name: slow, when: engine.rate(vllm:generation_tokens_total) < 5 for 3s, "
              "action: log}"));
    Trace trace(engine);
    double tokens = 0;
    // A scrape every 2s (the tick) and an evaluation every 1s (wake-ups in
    // between): the rate of 1/s holds at every evaluation.
    trace.run(8s, [&](long t) {
        if (t % 2 == 0) {
            tokens += 2;
            trace.base().engine =
                EngineReading{trace.clock().now(), {{"vllm:generation_tokens_total", tokens}}};
        }
    });
    ASSERT_EQ(trace.decisions().size(), 1u);
    EXPECT_EQ(trace.decisions()[0].first, 5s);  // a rate from t=2 on, held 3s
}

}  // namespace
}  // namespace infervisor
