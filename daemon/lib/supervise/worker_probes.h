// WorkerProbes: the health probes of one worker across its runs — which
// probe runs when, how each attempt is made, and a `probe-changed` journal
// event for every change of a probe's verdict.
//
// When each probe runs (Kubernetes' order, with one difference):
//   startup    from the start of a run until it first passes;
//   readiness  from the start when it is the gate (no startup probe), else
//              once loading is over; until the run ends;
//   liveness   once loading is over (never during a model load, so a slow
//              load cannot be mistaken for a hang even without a startup
//              probe); until the run ends.
// The Worker decides what a change means (loading over, start failed,
// stuck); this class only reports it through `on_change`.
//
// Contract: event-loop thread only; run_ended() cancels every attempt
// (an exec probe's cgroup is killed) and no callback follows it. A
// suspension ends the probes in the same turn as it asks for the freeze and
// starts them again only after the thaw, so no exec probe is started into a
// worker frozen by a suspension (one frozen by a policy `freeze` fails at its
// timeout, its cgroup killed: fatal signals end frozen processes).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "probe/probe_runner.h"
#include "probe/probe_spec.h"
#include "process/spawn_request.h"
#include "supervise/worker_context.h"

namespace infervisor {

struct ProbeSnapshot {
    ProbeRole role = ProbeRole::readiness;
    std::string target;   // describe_probe()
    bool active = false;  // being probed now
    ProbeVerdict verdict = ProbeVerdict::unknown;
    int64_t consecutive_failures = 0;
    uint64_t attempts = 0;
    uint64_t failures = 0;
    std::optional<ProbeOutcome> last_failure;
    std::optional<Duration> last_failure_age;
};

class WorkerProbes {
  public:
    using OnChange = std::function<void(ProbeRole, const ProbeChange&)>;

    WorkerProbes(WorkerContext& ctx, std::string worker, const ProbesSpec& spec,
                 OnChange on_change);
    ~WorkerProbes();

    // A run began; `launched` is how its process was started (credentials,
    // environment, work dir): exec probes run with the same.
    void run_started(const SpawnRequest& launched);
    // Loading is over (the gate passed, or READY=1, or there is no gate).
    void loading_over();
    void run_ended();

    std::vector<ProbeSnapshot> snapshot() const;

  private:
    struct Slot {
        ProbeRole role;
        std::unique_ptr<ProbeRunner> runner;
    };
    std::shared_ptr<ProbeAttempt> start_attempt(ProbeRole role, const ProbeSpec& spec,
                                                Duration timeout, ProbeDone done);
    void changed(ProbeRole role, const ProbeChange& change);
    Slot* slot(ProbeRole role);

    WorkerContext& ctx_;
    std::string worker_;
    ProbesSpec spec_;
    OnChange on_change_;
    std::vector<Slot> slots_;
    SpawnRequest launched_;
};

// The journal fields of a probe answer: PROBE, PROBE_KIND, PROBE_TARGET,
// PROBE_DETAIL, PROBE_LATENCY_MS, PROBE_HTTP_STATUS (when there was one).
std::vector<std::pair<std::string, std::string>> probe_fields(ProbeRole role, const ProbeSpec& spec,
                                                              const ProbeOutcome& outcome);

}  // namespace infervisor
