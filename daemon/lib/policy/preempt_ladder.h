// PreemptLadder: what a host rule's `action: preempt` does to its victim —
// the gentlest step that will work on this worker on this host, in order:
//
//  0. unload     (its inference server unloads its models and keeps running;
//                the next request loads them again) if its server can
//                (an Ollama worker: `engine: {kind: ollama}`) and the ladder
//                has not unloaded it within kRegrowWindow (memory that comes
//                back within half an hour is not given back by unloading
//                again) and the host has time for one: host.mem.headroom not
//                falling, or at least twice the unload's bound. Whether or
//                not it is preemptible: its clients see a slower answer, not
//                a frozen server. An unload that frees
//                nothing (no model loaded, or a model still busy when the
//                server's time is up) goes on at once to the step the ladder
//                would have taken without it (the decision carries it);
//  1. suspend    (freeze, memory pushed to swap; resume_when brings it back)
//                if the worker is `preemptible`, nothing has shown that a
//                suspension would not help it (no_suspend: an earlier one
//                freed nothing; or resume_when resumed it within the last
//                30 minutes and it is growing again: a leak, which a second
//                suspension would only put off; one that holds still and is
//                picked for another's trouble is suspended again), its
//                memory is not mostly unevictable (memory.stat unevictable:
//                mlocked pages cannot go to swap), and the host's free swap
//                holds its anonymous memory (there is somewhere to put it).
//                For a host rule on the GPUs alone (PreemptContext::on_gpu)
//                the memory to free is the card's: a suspension is chosen
//                only if it gives the GPU memory back (PreemptFacts::
//                keeps_gpu empty: `suspend: {gpu: release}` of a worker on
//                NVIDIA, or vllm-sleep), and swap does not matter;
//  2. checkpoint (its state written, then stopped; the next run restores it)
//                if a checkpoint requested of this worker has completed
//                before (the method works) and the host has time for one:
//                host.mem.headroom not falling, or at least twice the time
//                its last checkpoint took;
//  3. kill       otherwise.
//
// After a suspension that frees (almost) nothing (suspension_freed_nothing();
// for a rule on the GPUs, one whose GPU release or engine sleep did not
// happen), the ladder goes on at once: the executor kills the frozen worker (a
// checkpoint needs it thawed, and the host is short of memory now), and
// remembers it in no_suspend for the next time.
// Pure: facts in, a step and the reason out, for the journal (PREEMPT_STEP).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/clock.h"
#include "policy/rule_spec.h"

namespace infervisor {

// What the supervisor knows of a worker that a preempt step may use.
struct PreemptFacts {
    bool preemptible = true;  // the worker's `preemptible`
    // Why a suspension would not help this worker, from what happened to it
    // before ("its suspension by rule 'r' freed 0B of 412M"); "" if none.
    std::string no_suspend;
    // How long its last requested checkpoint took, from the request to the
    // checkpoint being published; empty when none has completed.
    std::optional<Duration> checkpoint_took;
    // How long ago resume_when resumed it, within PreemptHistory's
    // kRegrowWindow; empty otherwise.
    std::optional<Duration> resumed_ago = std::nullopt;
    // Set when its server unloads its models on request (engine kind
    // ollama): how long an unload may take (requests and the wait for the
    // models to leave).
    std::optional<Duration> unload_bound = std::nullopt;
    // How long ago the ladder unloaded its models, within PreemptHistory's
    // kRegrowWindow; empty otherwise.
    std::optional<Duration> unloaded_ago = std::nullopt;
    // Why a suspension would leave its GPU memory where it is ("suspend.gpu
    // is keep"); empty when it would give it back (Worker::
    // why_suspension_keeps_gpu()).
    std::string keeps_gpu = "";
};

// Whether a checkpoint before a kill fits in the time left: `runs_out_in`
// (memory.headroom or host.mem.headroom; empty: not running out) at least
// twice `last_took` (the last checkpoint's time; empty: not known). "" when
// it fits or nothing says otherwise, else why not, with `what` first:
// "the host runs out in 9s, its last checkpoint took 6s".
std::string why_no_time_to_checkpoint(std::optional<Duration> runs_out_in,
                                      std::optional<Duration> last_took, const std::string& what);

// The victim's and the host's numbers at the decision.
struct PreemptContext {
    std::optional<uint64_t> victim_anon;         // memory.stat anon, else memory.current
    std::optional<uint64_t> victim_unevictable;  // memory.stat unevictable
    std::optional<uint64_t> swap_free;           // SwapFree
    std::optional<Duration> host_headroom;       // host.mem.headroom; empty: not falling
    // Growing at kRunawayGrowthBytesPerMin or faster (victim.h), loading or
    // serving: the victim's own memory is what runs the host out.
    bool victim_growing = false;
    // The rule reads the GPUs alone: the victim was chosen on a card, and
    // victim_anon is what it holds there.
    bool on_gpu = false;
};

struct PreemptStep {
    Action action = Action::kill;  // unload, suspend, checkpoint or kill
    std::string why;               // "suspend: preemptible, swap free 900M for its 412M"
};

// An unload, and the step it goes on to when it frees nothing.
struct PreemptChoice {
    PreemptStep step;
    std::optional<PreemptStep> if_unload_fails;  // set when step is an unload
};

// A suspension that pushed out less than this share of the worker's memory
// freed (almost) nothing: its memory is pinned, or swap is full.
inline constexpr double kSuspensionMustFree = 0.10;

// Unevictable memory at or above this share of the worker's: a suspension
// would leave it where it is.
inline constexpr double kMostlyUnevictable = 0.90;

PreemptChoice choose_preempt_step(const PreemptFacts& facts, const PreemptContext& context);

// Whether a suspension that pushed out `reclaimed` of `before` freed (almost)
// nothing. Unknown `before` (no memory controller) and nothing reclaimed: yes.
bool suspension_freed_nothing(std::optional<uint64_t> before, uint64_t reclaimed);

}  // namespace infervisor
