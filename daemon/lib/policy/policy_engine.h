// PolicyEngine: measurements in, decisions out. No I/O and no clock of its
// own: the caller passes each sample and the time of evaluation, so traces
// replay exactly in tests.
//
// Use from the event loop, on every sampling tick and PSI wake-up:
//   for each worker:  decisions += engine.evaluate(name, sample, now);
//   then:             decisions += engine.evaluate_host(host, candidates, now);
// (evaluate() first: host rules choose victims by the memory and growth the
// engine last saw for each worker.) Call forget(name) when a worker's run
// ends (restart, stop), remove_worker(name) when it leaves the config.
//
// Phases (worker_phase.h): each run is `loading`, then `serving`. The growth
// tracker behind memory.growth and memory.headroom takes only serving
// samples, so those metrics are empty (their conditions false) while a run
// loads, and after it they measure from the serving baseline. Every worker
// decision carries PHASE (and SERVING_SINCE_SECONDS, SERVING_REASON).
//
// Timing of each rule for each worker: see rule_timer.h (a rule fires once
// its condition has held for `for`, then stays quiet until the condition
// clears, or until its cooldown; escalation once after escalate_after).
// A condition over a metric the sample lacks is false (it clears the rule).
// Dry run changes nothing in this timing: a dry-run decision counts as taken,
// so a dry run journals exactly what a real run would have done.
//
// Host rules keep one timer each for the host. A step picks its victim with
// pick_victim() (victim.h), by each worker's growth over the victim window
// in every phase (loading too) and its anonymous memory; the decision says
// why (VICTIM_REASON, with the others considered). A rule whose conditions
// read the GPUs alone (host.gpu.*) picks among the workers that hold memory
// on the card that runs short (HostSample::gpu_device), by what they hold
// there and by their GPU memory's growth: a worker that holds none there
// frees nothing there, however large it is in RAM. `action: preempt`
// becomes suspend, checkpoint or kill by the ladder (preempt_ladder.h) and
// says why (PREEMPT_STEP); an escalation hits the same victim as the step
// before it while that worker is still a candidate. A step with no victim
// (every worker protected) is not taken and stays due, except that a `log`
// step is taken with an empty worker.
//
// After a host step that ends a victim's run (kill, checkpoint) or suspends
// it, the host settles for `host_settle`: the victim's memory is being freed
// and the other workers page theirs back in, which looks like thrashing to
// swap and pressure rules but is the recovery. While it settles, a host rule
// that has not fired does not start its `for` clock, and cooldown repeats
// wait; an escalation of a rule that already fired still climbs its ladder.
// So a second victim needs host_settle + `for` of the condition after the
// first.
//
// After a resume (resumed()) only the thrash signals are discounted for
// `host_settle`: the resumed worker pages its memory back in, so host rules
// read no swap rate and no pressure (those comparisons are false) while it
// does; MemAvailable and swap.free count as always. A worker that resumes
// and grows the host into trouble again is acted on at once, not 30s later
// when the kernel's OOM killer may already have had to.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "policy/decision.h"
#include "policy/metrics.h"
#include "policy/rate_tracker.h"
#include "policy/rule_spec.h"
#include "policy/rule_timer.h"
#include "policy/samples.h"
#include "policy/victim.h"
#include "policy/worker_phase.h"

namespace infervisor {

struct PolicyOptions {
    bool dry_run = false;              // every decision is dry-run
    Duration growth_window{60'000};    // memory.growth's window
    Duration headroom_window{10'000};  // memory.headroom's growth rate: recent, short
    Duration rate_interval{1'000};     // shortest interval for swap/cpu rates
    Duration host_settle{30'000};      // see above; 0: host rules never wait
    // host.mem.headroom's fall rate of MemAvailable: short, so a step (a
    // model load) is forgotten a moment after it ended (a window shorter
    // than the sample interval measures over the last interval).
    Duration host_headroom_window{2'000};
    // Victim choice's growth (every phase): recent, a little longer than the
    // headroom's so one allocation burst does not decide it.
    Duration victim_window{10'000};
    PhaseOptions phases;  // when a worker without readiness signal settles
};

class PolicyEngine {
  public:
    explicit PolicyEngine(PolicyOptions options = {});

    // The rules of workers that have none of their own, and the base that a
    // worker's own rules are merged into (merge_rules()). Rules are expected
    // to be validated (validate_rules()). A rule whose definition changes
    // starts its timing afresh; unchanged rules keep theirs.
    void set_default_rules(std::vector<RuleSpec> rules);
    void set_worker_rules(const std::string& worker, std::vector<RuleSpec> own);
    void set_host_rules(std::vector<RuleSpec> rules);
    void set_dry_run(bool dry_run) { options_.dry_run = dry_run; }
    // memory.growth's window, for workers tracked now and later. A shorter
    // window answers sooner (after half of it) but follows noise more.
    void set_growth_window(Duration window);
    // The window of the growth rate behind memory.headroom: short, because
    // a leak reaches its cap within a few of them.
    void set_headroom_window(Duration window);
    void set_host_settle(Duration settle) { options_.host_settle = settle; }
    // host.mem.headroom's window (the samples kept so far stay).
    void set_host_headroom_window(Duration window);
    // The window of victim choice's growth, for workers tracked now and later.
    void set_victim_window(Duration window);
    // For runs started from now on (the span a worker's memory must hold
    // still to count as loaded; see worker_phase.h).
    void set_load_settle(Duration settle) { options_.phases.settle = settle; }
    // A worker was resumed at `now`: for host_settle, host rules read no swap
    // rate and no pressure (see above).
    void resumed(TimePoint now);

    // `checkpoint_took`: how long the worker's last checkpoint took (as
    // PreemptFacts says). A memory rule's checkpoint before a kill, restart
    // or park becomes a plain kill when memory.headroom is under twice that
    // (why_no_time_to_checkpoint): an emergency is never held up by a slow
    // save. Host rules do the same with host.mem.headroom and the victim's
    // facts.
    std::vector<Decision> evaluate(const std::string& worker, const WorkerSample& sample,
                                   TimePoint now,
                                   std::optional<Duration> checkpoint_took = std::nullopt);
    std::vector<Decision> evaluate_host(const HostSample& sample,
                                        const std::vector<WorkerCandidate>& candidates,
                                        TimePoint now);

    // Drops what was measured and decided about the worker (growth history,
    // rates, event baselines, rule timers); its rules stay.
    void forget(const std::string& worker);
    // forget() and drop the worker's own rules.
    void remove_worker(const std::string& worker);

    // The worker's effective rules (its own merged into the defaults).
    const std::vector<RuleSpec>& rules_for(const std::string& worker) const;
    // memory.growth as last computed for the worker, for status displays.
    std::optional<double> growth_percent_per_min(const std::string& worker) const;
    // The phase of the worker's current run as last evaluated; empty for a
    // worker the engine has no sample of in this run.
    std::optional<WorkerPhase> phase_of(const std::string& worker) const;
    // The current run's serving baseline (PhaseTracker::baseline()).
    std::optional<uint64_t> serving_baseline(const std::string& worker) const;

  private:
    struct TimedRule {
        RuleSpec spec;  // the definition the timer was started for
        RuleTimer timer;
    };
    struct WorkerState {
        PhaseTracker phase;
        GrowthTracker growth;      // serving samples only
        GrowthTracker recent;      // the same, over the headroom window
        GrowthTracker victim;      // anon (else memory.current), every phase, victim window
        GrowthTracker gpu;         // gpu.memory, serving samples only (gpu.growth)
        GrowthTracker gpu_victim;  // gpu.memory, every phase, victim window
        CounterRate swap_in, swap_out, cpu;
        std::optional<MemoryEvents> events_baseline;
        std::optional<WorkerSample> last;
        std::map<std::string, TimedRule> timers;
        SeriesRates engine_rates;  // engine.rate(NAME)
    };
    struct HostState {
        CounterRate swap_in, swap_out;
        GrowthTracker mem_available{Duration(2'000)};  // host.mem.headroom
        std::map<std::string, TimedRule> timers;
        std::map<std::string, std::string> victims;  // rule → worker of its last step
        TimePoint settled_at{};                      // host rules wait until then (see host_settle)
        TimePoint thrash_discounted_until{};         // after a resume (see resumed())
    };

    WorkerState& state_of(const std::string& worker);
    void track(WorkerState& state, const WorkerSample& sample);
    static WorkerInputs inputs_of(const WorkerState& state, const WorkerSample& sample,
                                  TimePoint now);
    // Names the victim in a host decision and adds what is known of it.
    struct Chosen {
        VictimView view;
        std::string reason;  // VICTIM_REASON
    };
    void aim_at(Decision& decision, const Chosen& victim, const RuleSpec& rule, TimePoint now);
    // `action: preempt`: the decision becomes the ladder's step for this
    // victim on this host (preempt_ladder.h), with why (PREEMPT_STEP).
    static void take_gentlest_step(Decision& decision, const VictimView& victim,
                                   const HostInputs& host);
    VictimView view_of(const WorkerCandidate& candidate) const;
    // Its view on the GPU `device`; empty when it holds no memory there.
    std::optional<VictimView> gpu_view_of(const WorkerCandidate& candidate,
                                          const std::string& device) const;
    std::optional<Chosen> choose_victim(const RuleSpec& rule, RuleStep step,
                                        const std::vector<WorkerCandidate>& candidates,
                                        const HostSample& host) const;
    bool dry_run(const RuleSpec& rule) const { return options_.dry_run || rule.dry_run; }

    PolicyOptions options_;
    std::vector<RuleSpec> defaults_;
    std::map<std::string, std::vector<RuleSpec>> own_rules_;
    std::map<std::string, std::vector<RuleSpec>> effective_;  // workers with own rules
    std::vector<RuleSpec> host_rules_;
    std::map<std::string, WorkerState> workers_;
    HostState host_;
};

}  // namespace infervisor
