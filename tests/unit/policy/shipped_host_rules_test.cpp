// Issue 25: the SHIPPED host rules (etc/infervisor.yaml as a package installs
// it, with its default worker rules and sample_interval) replayed on traces
// of a 1 GiB host: what the field reports describe, workers configured as
// the README shows (a command and a cap; no notify, no probes: each is
// loading until its memory settles). The engine is configured as the daemon
// configures it (configure_engine(), supervise/policy_options.cpp).
//
// The host is a model: MemAvailable is RAM minus the system's share minus
// what the live workers hold (anonymous memory; their swap_max is 0, so
// the host's swap stays free and unused). A kill or a checkpoint ends the
// worker's run at once (no restart: what follows is the Worker's half of the
// issue); a suspension moves its memory into swap and takes it out of the
// candidates (resume_when is the ResumePlanner's, not replayed here).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>

#include "config/config_loader.h"
#include "policy/policy_engine.h"
#include "supervise/policy_options.h"
#include "support/byte_units.h"

namespace infervisor {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kRam = 1ull << 30;

// The shipped main file, loaded as the daemon loads it (the demo workers of
// the build dir stand in for workers.d; they are not used).
using Shipped = Config;

Shipped load_shipped() {
    const char* src = std::getenv("INFERVISOR_SOURCE_ROOT");
    const char* build = std::getenv("INFERVISOR_BUILD_ROOT");
    EXPECT_NE(src, nullptr);
    EXPECT_NE(build, nullptr);
    if (!src || !build) return {};
    auto loaded = load_config(
        {std::filesystem::path(src) / "etc/infervisor.yaml", std::filesystem::path(build) / "etc"});
    EXPECT_TRUE(loaded.ok()) << loaded.errors.format();
    EXPECT_FALSE(loaded.config.host_rules.empty());
    return loaded.config;
}

struct Acted {
    double at;  // seconds since the trace began
    Decision decision;
    double available_percent;
};

// A host of 1 GiB with workers whose anonymous memory follows a function of
// the time since their start; sampled every sample_interval, as the daemon
// does (policy_options.cpp sets the engine's windows the same way).
class Host {
  public:
    explicit Host(const Shipped& shipped, double system_mib, bool swap, bool worker_rules = true)
        : shipped_(shipped), system_(system_mib * MiB), swap_(swap) {
        engine_.emplace(policy_options(shipped.daemon));
        configure_engine(*engine_, shipped.daemon);
        if (worker_rules) engine_->set_default_rules(shipped.default_rules);
        engine_->set_host_rules(shipped.host_rules);
    }

    // `mib(t)`: its anonymous memory t seconds after its start, in MiB.
    void worker(std::string name, double cap_mib, double start_at,
                std::function<double(double)> mib, PreemptFacts preempt = {}) {
        workers_.push_back(
            {std::move(name), cap_mib * MiB, start_at, std::move(mib), true, false, 0, preempt});
    }

    double now() const { return t_; }
    double available() const {
        double used = system_;
        for (const auto& w : workers_)
            if (w.alive && !w.suspended && t_ >= w.start_at) used += w.mib(t_ - w.start_at) * MiB;
        return std::max(0.0, static_cast<double>(kRam) - used);
    }
    double available_percent() const { return 100.0 * available() / static_cast<double>(kRam); }
    // The first time the host's MemAvailable was below `percent`, or -1.
    double first_below(double percent) const {
        for (const auto& [t, p] : history_)
            if (p < percent) return t;
        return -1;
    }
    double lowest_percent() const {
        double low = 100;
        for (const auto& [t, p] : history_) low = std::min(low, p);
        return low;
    }

    void run_until(double end) {
        const double step = std::chrono::duration<double>(shipped_.daemon.sample_interval).count();
        while (t_ < end) {
            evaluate();
            t_ += step;
        }
    }

    const std::vector<Acted>& actions() const { return actions_; }
    bool alive(const std::string& name) const {
        for (const auto& w : workers_)
            if (w.name == name) return w.alive;
        return false;
    }
    bool suspended(const std::string& name) const {
        for (const auto& w : workers_)
            if (w.name == name) return w.suspended;
        return false;
    }

  private:
    struct Worker {
        std::string name;
        double cap;
        double start_at;
        std::function<double(double)> mib;
        bool alive;
        bool suspended;
        double in_swap;  // bytes its suspension pushed out
        PreemptFacts preempt;
    };

    TimePoint at() const {
        return TimePoint{} + std::chrono::hours(1) + Duration(std::llround(t_ * 1000));
    }

    void evaluate() {
        std::vector<Decision> decisions;
        std::vector<WorkerCandidate> candidates;
        for (const auto& w : workers_) {
            if (!w.alive || w.suspended || t_ < w.start_at) continue;
            WorkerSample s;
            s.time = at();
            s.started_at =
                TimePoint{} + std::chrono::hours(1) + Duration(std::llround(w.start_at * 1000));
            s.ready_at = s.started_at;  // as Worker::ready_at() for a worker without readiness
            s.signals_readiness = false;
            s.memory_max = static_cast<uint64_t>(w.cap);
            s.memory_anon = static_cast<uint64_t>(w.mib(t_ - w.start_at) * MiB);
            s.memory_current = *s.memory_anon + (4ull << 20);  // its binary's page cache
            for (auto& d : engine_->evaluate(w.name, s, at())) decisions.push_back(std::move(d));
            candidates.push_back({w.name, 0, false, w.preempt});
        }
        HostSample h;
        h.time = at();
        h.mem_total = kRam;
        h.mem_available = static_cast<uint64_t>(available());
        h.swap_total = swap_ ? kRam : 0;
        h.swap_free = h.swap_total;
        for (const auto& w : workers_) *h.swap_free -= static_cast<uint64_t>(w.in_swap);
        history_.push_back({t_, available_percent()});
        for (auto& d : engine_->evaluate_host(h, candidates, at()))
            decisions.push_back(std::move(d));
        for (auto& d : decisions) {
            actions_.push_back({t_, d, available_percent()});
            if (d.dry_run) continue;
            for (auto& w : workers_) {
                if (w.name != d.worker) continue;
                if (d.action == Action::kill || d.action == Action::checkpoint) w.alive = false;
                if (d.action == Action::suspend) {
                    w.suspended = true;
                    w.in_swap = w.mib(t_ - w.start_at) * MiB;
                }
            }
            if (d.action == Action::kill || d.action == Action::checkpoint ||
                d.action == Action::suspend)
                engine_->forget(d.worker);
        }
    }

    const Shipped& shipped_;
    std::optional<PolicyEngine> engine_;
    double system_;
    bool swap_;
    double t_ = 0;
    std::vector<Worker> workers_;
    std::vector<Acted> actions_;
    std::vector<std::pair<double, double>> history_;
};

std::string field(const Decision& d, const std::string& key) {
    for (const auto& [k, v] : d.measurements)
        if (k == key) return v;
    return "<absent>";
}

std::string describe(const std::vector<Acted>& actions) {
    std::string out;
    for (const auto& a : actions)
        out += "  t=" + std::to_string(a.at) + " " + a.decision.rule + " " +
               std::string(to_string(a.decision.action)) + " " + a.decision.worker + ": " +
               a.decision.reason + "\n";
    return out;
}

// A load of `model` MiB at `rate` MiB/s from the start, then steady.
std::function<double(double)> load(double model, double rate = 400) {
    return [=](double t) { return std::min(model, 4 + rate * t); };
}

// Case 1, the tiny host: an important 350 MB server (cap 400M) holds still;
// a batch job (cap 1G) starts and grows at 20 MB/s toward 800 MB. It never
// settles, so it is still "loading" when the host runs low. The batch job
// pays, first and alone; the server's run is never touched.
TEST(ShippedHostRules, TheTinyHostTakesTheGrowerNotTheSteadyServer) {
    Shipped shipped = load_shipped();
    Host host(shipped, 150, /*swap=*/false);
    host.worker("server", 400, 0, load(350));
    host.worker("batch", 1024, 60, [](double t) { return std::min(800.0, 10 + 20 * t); });
    host.run_until(180);
    const auto& actions = host.actions();
    ASSERT_FALSE(actions.empty()) << "the host ran out and nobody acted";
    const Decision& first = actions[0].decision;
    EXPECT_EQ(first.worker, "batch") << describe(actions);
    EXPECT_EQ(first.scope, RuleScope::host);
    EXPECT_EQ(first.action, Action::kill) << "no swap to suspend it into";
    EXPECT_EQ(field(first, "PREEMPT_STEP"),
              "kill: not suspended (no free swap), not checkpointed (no checkpoint of it has "
              "completed)");
    EXPECT_EQ(field(first, "PHASE"), "loading") << "the grower was still loading";
    EXPECT_EQ(field(first, "VICTIM_REASON").rfind("growing 20.0 MiB/s (anon ", 0), 0u)
        << field(first, "VICTIM_REASON");
    EXPECT_NE(field(first, "VICTIM_REASON").find("; others: server +0.0 MiB/s 350.0 MiB"),
              std::string::npos)
        << field(first, "VICTIM_REASON");
    EXPECT_GT(actions[0].available_percent, 2.0) << "acted before the kernel would";
    for (const auto& a : actions) EXPECT_NE(a.decision.worker, "server") << describe(actions);
    EXPECT_TRUE(host.alive("server"));
}

// Case 2, a second model: a server loads 200 MB, serves 45 s, then loads a
// second model (+150 MB in 3 s) within its 800M cap. The host is left at
// 9.9% available, swap free and unused, no pressure: low, but steady. Nobody
// acts (the old `host.mem.available < 10%` killed it at once).
TEST(ShippedHostRules, ASecondModelLoadThatLeavesTheHostLowButSteadyIsLeftAlone) {
    Shipped shipped = load_shipped();
    const double system = 1024 * (1 - 0.099) - 350;  // leaves 9.9% at the end
    Host host(shipped, system, /*swap=*/true);
    host.worker("server", 800, 0, [](double t) {
        double mib = std::min(200.0, 4 + 100 * t);  // the first model, 2 s
        if (t > 47) mib += std::min(150.0, 50 * (t - 47));
        return mib;
    });
    host.run_until(240);
    EXPECT_LT(host.lowest_percent(), 10.0) << "the trace must reach the old rule's level";
    EXPECT_GT(host.lowest_percent(), 9.0);
    EXPECT_TRUE(host.actions().empty()) << describe(host.actions());
}

// The steady leak of issue 11 (tests/vm/scenarios/130): a 300 MB server
// next to a worker that serves at 50 MB, then leaks 20 MB/s into its 600M
// cap, with (zram) swap the workers may not use. With the worker rules off
// the host rules alone stop it, before the host runs out, within 10 s of
// the host crossing into danger (MemAvailable under 25% and falling).
TEST(ShippedHostRules, HostRulesAloneStopASteadyLeakBeforeTheKernel) {
    Shipped shipped = load_shipped();
    Host host(shipped, 250, /*swap=*/true, /*worker_rules=*/false);
    host.worker("steady", 400, 0, load(300));
    host.worker("leaker", 600, 0, [](double t) { return t < 40 ? 50 : 50 + 20 * (t - 40); });
    host.run_until(150);
    const auto& actions = host.actions();
    ASSERT_FALSE(actions.empty()) << "the leak was not stopped";
    EXPECT_EQ(actions[0].decision.worker, "leaker") << describe(actions);
    EXPECT_EQ(actions[0].decision.action, Action::suspend) << "swap holds it: gentle first";
    EXPECT_EQ(actions.size(), 1u) << describe(actions);
    EXPECT_GT(actions[0].available_percent, 2.0) << describe(actions);
    double danger = host.first_below(25.0);
    ASSERT_GE(danger, 0);
    EXPECT_LE(actions[0].at - danger, 10.0) << describe(actions);
    EXPECT_TRUE(host.alive("steady"));
}

// Gentle first (issue 25): the tiny host of case 1 with swap. The batch job
// is suspended, not killed: frozen, its memory in swap, its work intact;
// the server is untouched, and nothing else is needed.
TEST(ShippedHostRules, WithSwapTheGrowerIsSuspendedNotKilled) {
    Shipped shipped = load_shipped();
    Host host(shipped, 150, /*swap=*/true);
    host.worker("server", 400, 0, load(350));
    host.worker("batch", 1024, 60, [](double t) { return std::min(800.0, 10 + 20 * t); });
    host.run_until(180);
    const auto& actions = host.actions();
    ASSERT_EQ(actions.size(), 1u) << describe(actions);
    const Decision& d = actions[0].decision;
    EXPECT_EQ(d.worker, "batch");
    EXPECT_EQ(d.action, Action::suspend);
    EXPECT_TRUE(d.ladder);
    EXPECT_EQ(field(d, "PREEMPT_STEP").rfind("suspend: preemptible, swap free 1G for its ", 0), 0u)
        << field(d, "PREEMPT_STEP");
    EXPECT_TRUE(host.suspended("batch"));
    EXPECT_TRUE(host.alive("server"));
    EXPECT_FALSE(host.suspended("server"));
}

// `preemptible: false`: the same grower is killed, swap or not, and the
// journal says why it was not suspended.
TEST(ShippedHostRules, AGrowerThatIsNotPreemptibleIsKilled) {
    Shipped shipped = load_shipped();
    Host host(shipped, 150, /*swap=*/true);
    host.worker("server", 400, 0, load(350));
    host.worker(
        "batch", 1024, 60, [](double t) { return std::min(800.0, 10 + 20 * t); },
        PreemptFacts{false, "", std::nullopt});
    host.run_until(180);
    ASSERT_FALSE(host.actions().empty());
    const Decision& d = host.actions()[0].decision;
    EXPECT_EQ(d.worker, "batch") << describe(host.actions());
    EXPECT_EQ(d.action, Action::kill);
    EXPECT_NE(field(d, "PREEMPT_STEP").find("not preemptible"), std::string::npos)
        << field(d, "PREEMPT_STEP");
    EXPECT_TRUE(host.alive("server"));
}

// Without swap, a grower whose checkpoints work (the last took 1 s) is
// checkpointed rather than killed: the host, falling 20 MB/s, has time for it
// (some 4 s when the rule fires). One whose last checkpoint took 2 minutes
// is killed: no time for that.
TEST(ShippedHostRules, WithoutSwapAWorkingCheckpointIsTakenWhenTheHostHasTimeForIt) {
    Shipped shipped = load_shipped();
    for (auto [took, expected] : {std::pair{Duration(1'000), Action::checkpoint},
                                  std::pair{Duration(120'000), Action::kill}}) {
        Host host(shipped, 150, /*swap=*/false);
        host.worker("server", 400, 0, load(350));
        host.worker(
            "batch", 1024, 60, [](double t) { return std::min(800.0, 10 + 20 * t); },
            PreemptFacts{true, "", took});
        host.run_until(180);
        ASSERT_FALSE(host.actions().empty());
        const Decision& d = host.actions()[0].decision;
        EXPECT_EQ(d.worker, "batch") << describe(host.actions());
        EXPECT_EQ(d.action, expected) << field(d, "PREEMPT_STEP");
        if (expected == Action::kill) {
            EXPECT_NE(field(d, "PREEMPT_STEP").find("its last checkpoint took 2m"),
                      std::string::npos)
                << field(d, "PREEMPT_STEP");
        }
        EXPECT_TRUE(host.alive("server"));
    }
}

// With the worker rules on, as shipped, one of them or a host rule ends the
// leak; whichever it is, it is the leaker, and only it.
TEST(ShippedHostRules, AsShippedTheLeakerAloneIsStopped) {
    Shipped shipped = load_shipped();
    Host host(shipped, 250, /*swap=*/true);
    host.worker("steady", 400, 0, load(300));
    host.worker("leaker", 600, 0, [](double t) { return t < 40 ? 50 : 50 + 20 * (t - 40); });
    host.run_until(150);
    ASSERT_FALSE(host.actions().empty());
    for (const auto& a : host.actions()) EXPECT_EQ(a.decision.worker, "leaker");
    EXPECT_TRUE(host.alive("steady"));
}

// A fast model load (tests/vm/scenarios/131: 300 MB as fast as the guest
// writes it, beside a 100 MB one) that ends with room left is no emergency.
TEST(ShippedHostRules, AFastLoadIsNeverTakenForRunningOut) {
    Shipped shipped = load_shipped();
    Host host(shipped, 400, /*swap=*/true);
    host.worker("plain", 400, 0, load(300, 150));
    host.worker("notifying", 400, 0, load(100, 150));
    host.run_until(120);
    EXPECT_LT(host.lowest_percent(), 25.0) << "the load must cross the running-out level";
    EXPECT_TRUE(host.actions().empty()) << describe(host.actions());
}

// A fast fill (40 MB/s: on this sample grid faster ones need the PSI
// trigger's wake-up) on a host whose swap the workers may not use: under 5% and
// still falling, the host acts without waiting for a `for`.
TEST(ShippedHostRules, AFastFillToTheEdgeIsStoppedAtOnce) {
    Shipped shipped = load_shipped();
    Host host(shipped, 200, /*swap=*/true);
    host.worker("steady", 400, 0, load(300));
    host.worker("filler", 1024, 60, [](double t) { return std::min(1000.0, 10 + 40 * t); });
    host.run_until(120);
    ASSERT_FALSE(host.actions().empty());
    EXPECT_EQ(host.actions()[0].decision.worker, "filler") << describe(host.actions());
    EXPECT_EQ(host.actions()[0].decision.rule, "host-memory-low");
    EXPECT_GT(host.actions()[0].available_percent, 0.0) << describe(host.actions());
}

}  // namespace
}  // namespace infervisor
