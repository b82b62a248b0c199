#include "policy/preempt_history.h"

#include "base/units.h"

namespace infervisor {

PreemptFacts PreemptHistory::facts_of(const std::string& worker, bool preemptible,
                                      std::optional<Duration> checkpoint_took,
                                      TimePoint now) const {
    PreemptFacts facts{preemptible, "", checkpoint_took};
    auto it = entries_.find(worker);
    if (it == entries_.end()) return facts;
    const Entry& e = it->second;
    facts.no_suspend = e.freed_nothing;
    if (e.resumed_at && now - *e.resumed_at < kRegrowWindow)
        facts.resumed_ago = std::chrono::floor<std::chrono::seconds>(now - *e.resumed_at);
    if (e.unloaded_at && now - *e.unloaded_at < kRegrowWindow)
        facts.unloaded_ago = std::chrono::floor<std::chrono::seconds>(now - *e.unloaded_at);
    return facts;
}

void PreemptHistory::suspension_freed_nothing(const std::string& worker, std::string what) {
    entries_[worker].freed_nothing = std::move(what);
}

void PreemptHistory::resumed(const std::string& worker, TimePoint now) {
    entries_[worker].resumed_at = now;
}

void PreemptHistory::unloaded(const std::string& worker, TimePoint now) {
    entries_[worker].unloaded_at = now;
}

void PreemptHistory::forget(const std::string& worker) { entries_.erase(worker); }

}  // namespace infervisor
