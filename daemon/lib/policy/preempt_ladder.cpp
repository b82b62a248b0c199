#include "policy/preempt_ladder.h"

#include "base/units.h"

namespace infervisor {

namespace {

// Why the worker cannot be suspended; "" when it can.
std::string why_not_suspend(const PreemptFacts& facts, const PreemptContext& c) {
    if (!facts.preemptible) return "not preemptible";
    if (!facts.no_suspend.empty()) return facts.no_suspend;
    if (facts.resumed_ago && c.victim_growing)
        return "it grew back within " + format_duration(*facts.resumed_ago) +
               " of resume_when's resume: the suspension did not help";
    if (c.on_gpu)
        return facts.keeps_gpu.empty() ? ""
                                       : "a suspension keeps its GPU memory: " + facts.keeps_gpu;
    if (c.victim_anon && c.victim_unevictable && *c.victim_anon > 0 &&
        static_cast<double>(*c.victim_unevictable) >=
            kMostlyUnevictable * static_cast<double>(*c.victim_anon))
        return "its memory is unevictable (" + human_size(*c.victim_unevictable) + " of " +
               human_size(*c.victim_anon) + ": mlocked)";
    if (!c.swap_free || *c.swap_free == 0) return "no free swap";
    if (c.victim_anon && *c.swap_free < *c.victim_anon)
        return "swap free " + human_size(*c.swap_free) + " < its " + human_size(*c.victim_anon);
    return "";
}

// Why no checkpoint is taken; "" when one can be.
std::string why_not_checkpoint(const PreemptFacts& facts, const PreemptContext& c) {
    if (!facts.checkpoint_took) return "no checkpoint of it has completed";
    return why_no_time_to_checkpoint(c.host_headroom, facts.checkpoint_took, "the host runs out");
}

std::string suspend_reason(const PreemptContext& c) {
    if (c.on_gpu)
        return "suspend: preemptible, its suspension gives back its " +
               (c.victim_anon ? human_size(*c.victim_anon) + " of " : std::string()) + "GPU memory";
    std::string why = "suspend: preemptible";
    if (c.swap_free) why += ", swap free " + human_size(*c.swap_free);
    if (c.victim_anon) why += " for its " + human_size(*c.victim_anon);
    return why;
}

// Steps 1-3: suspend, checkpoint or kill.
PreemptStep choose_beyond_unload(const PreemptFacts& facts, const PreemptContext& c) {
    std::string no_suspend = why_not_suspend(facts, c);
    std::string no_checkpoint = why_not_checkpoint(facts, c);
    if (no_suspend.empty()) return {Action::suspend, suspend_reason(c)};
    if (no_checkpoint.empty())
        return {Action::checkpoint, "checkpoint: not suspended (" + no_suspend +
                                        "); its last checkpoint took " +
                                        format_duration(*facts.checkpoint_took)};
    return {Action::kill,
            "kill: not suspended (" + no_suspend + "), not checkpointed (" + no_checkpoint + ")"};
}

}  // namespace

std::string why_no_time_to_checkpoint(std::optional<Duration> runs_out_in,
                                      std::optional<Duration> last_took, const std::string& what) {
    if (!runs_out_in || !last_took || *runs_out_in >= 2 * *last_took) return "";
    return what + " in " + format_duration(*runs_out_in) + ", its last checkpoint took " +
           format_duration(*last_took);
}

PreemptChoice choose_preempt_step(const PreemptFacts& facts, const PreemptContext& c) {
    PreemptStep beyond = choose_beyond_unload(facts, c);
    if (!facts.unload_bound) return {std::move(beyond), std::nullopt};
    if (facts.unloaded_ago) {
        beyond.why += " (its models were unloaded " + format_duration(*facts.unloaded_ago) +
                      " ago and it is picked again: unloading did not help)";
        return {std::move(beyond), std::nullopt};
    }
    if (c.host_headroom && *c.host_headroom < 2 * *facts.unload_bound) {
        beyond.why += " (not unloaded: the host runs out in " + format_duration(*c.host_headroom) +
                      ", an unload may take " + format_duration(*facts.unload_bound) + ")";
        return {std::move(beyond), std::nullopt};
    }
    return {{Action::unload, "unload: its server unloads its models and keeps running"},
            std::move(beyond)};
}

bool suspension_freed_nothing(std::optional<uint64_t> before, uint64_t reclaimed) {
    if (!before || *before == 0) return reclaimed == 0;
    return static_cast<double>(reclaimed) < kSuspensionMustFree * static_cast<double>(*before);
}

}  // namespace infervisor
