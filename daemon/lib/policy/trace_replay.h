// TraceReplay: a recorded trace (policy_trace.h) run through a policy engine
// set up with another configuration, beside what really happened: the
// heart of `infervisorctl simulate`. Pure: no I/O, no clock.
//
// Each round is given to the engine as the daemon gave it (the workers'
// samples, then the host's with the victims' facts); a run that started or
// a worker that was resumed is told to it in between, as the daemon's
// PolicyRunner does. The engine's decisions in a round are compared with the
// decisions the daemon's engine took in the same round (rule, worker,
// action, dry run). The first round where they differ is the divergence:
// from there on the samples are what happened after the real decisions,
// not after the simulated ones, and every item after it says so.
// Each worker's phase after each sample is compared with the one the daemon
// recorded (phase_differences): a changed sample_interval or start_timeout
// moves the end of a load, and with it when growth rules may act.
// What the engine does not decide is shown as it was: resume_when, the
// steps a suspension or unload that freed nothing went on to, a run's end.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "policy/policy_engine.h"
#include "policy/policy_trace.h"

namespace infervisor {

struct ReplayItem {
    enum class Kind {
        same,       // decided in the replay and really, in the same round
        would,      // decided in the replay only
        not_taken,  // decided really only
        happened,   // an event the engine does not decide (a run's end)
    };
    Kind kind = Kind::happened;
    int64_t wall_ms = 0;
    std::string worker;  // "" for a host decision without a victim
    std::string rule;
    std::string action;
    bool dry_run = false;
    std::string detail;  // the replay's reason, or what the daemon recorded
    bool after_divergence = false;
};

struct ReplayResult {
    std::vector<ReplayItem> items;  // in time order
    size_t rounds = 0;
    int64_t first_wall_ms = 0, last_wall_ms = 0;  // of the rounds replayed
    std::optional<int64_t> diverged_at_wall_ms;
    // Samples where the replay judged a run's phase (loading, serving)
    // otherwise than the daemon had, and the first of them.
    size_t phases_compared = 0;  // samples with a recorded phase
    size_t phase_differences = 0;
    std::optional<ReplayItem> first_phase_difference;  // kind happened; detail says how
};

struct ReplaySetup {
    // Only entries at or after this wall time are replayed (the engine
    // starts empty there, as a daemon does when it starts).
    std::optional<int64_t> since_wall_ms;
    // A victim's facts as the configuration gives them (priority,
    // protected, preemptible), applied to each recorded candidate.
    std::function<void(WorkerCandidate&)> adjust_candidate;
};

// `engine` is configured with the rules to try and is fed the trace; it is
// left with the state at the trace's end.
ReplayResult replay_trace(const std::vector<TraceEntry>& trace, PolicyEngine& engine,
                          const ReplaySetup& setup = {});

}  // namespace infervisor
