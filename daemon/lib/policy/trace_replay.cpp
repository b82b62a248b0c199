#include "policy/trace_replay.h"

#include <algorithm>
#include <tuple>

namespace infervisor {

namespace {

// What makes two decisions the same decision.
using DecisionKey = std::tuple<std::string, std::string, std::string, bool>;

DecisionKey key_of(const ReplayItem& item) {
    return {item.worker, item.rule, item.action, item.dry_run};
}

ReplayItem item_of(const Decision& d, int64_t wall_ms) {
    return {ReplayItem::Kind::would,          wall_ms,   d.worker, d.rule,
            std::string(to_string(d.action)), d.dry_run, d.reason};
}

ReplayItem item_of(const TraceEvent& e) {
    ReplayItem item{
        ReplayItem::Kind::happened, e.wall_ms, e.worker, e.rule, e.action, e.dry_run, e.text};
    if (e.kind == TraceEventKind::decision) item.kind = ReplayItem::Kind::not_taken;
    if (e.kind == TraceEventKind::exited && item.action.empty()) item.action = "exited";
    return item;
}

// Pairs the round's replayed decisions with the recorded ones; true when
// they are the same (as multisets of keys).
bool settle_round(std::vector<ReplayItem>& simulated, std::vector<ReplayItem>& recorded) {
    bool same = true;
    std::vector<bool> used(recorded.size(), false);
    for (auto& s : simulated) {
        bool found = false;
        for (size_t i = 0; i < recorded.size() && !found; ++i)
            if (!used[i] && key_of(recorded[i]) == key_of(s)) {
                used[i] = found = true;
                s.kind = ReplayItem::Kind::same;
            }
        same = same && found;
    }
    std::vector<ReplayItem> left;
    for (size_t i = 0; i < recorded.size(); ++i)
        if (!used[i]) left.push_back(std::move(recorded[i]));
    same = same && left.empty();
    recorded = std::move(left);
    return same;
}

}  // namespace

ReplayResult replay_trace(const std::vector<TraceEntry>& trace, PolicyEngine& engine,
                          const ReplaySetup& setup) {
    ReplayResult result;
    std::vector<ReplayItem> simulated, recorded;  // of the current round
    bool in_round = false;
    auto flush = [&] {
        if (!in_round) return;
        bool same = settle_round(simulated, recorded);
        bool diverged = result.diverged_at_wall_ms.has_value();
        if (!same && !diverged && !simulated.empty())
            result.diverged_at_wall_ms = simulated.front().wall_ms;
        else if (!same && !diverged)
            result.diverged_at_wall_ms = recorded.front().wall_ms;
        for (auto* items : {&simulated, &recorded})
            for (auto& item : *items) {
                item.after_divergence = diverged;
                result.items.push_back(std::move(item));
            }
        simulated.clear();
        recorded.clear();
        in_round = false;
    };
    for (const auto& entry : trace) {
        if (setup.since_wall_ms && entry_wall_ms(entry) < *setup.since_wall_ms) continue;
        if (const auto* e = std::get_if<TraceEvent>(&entry)) {
            // What was journaled is the history's; the engine's decisions
            // are compared above.
            if (e->kind == TraceEventKind::action) continue;
            switch (e->kind) {
                case TraceEventKind::decision:
                    // The engine's decisions follow their round; resume_when
                    // is the resume planner's, not the engine's.
                    if (in_round && e->rule != "resume_when") {
                        recorded.push_back(item_of(*e));
                        continue;
                    }
                    break;
                case TraceEventKind::started:
                    engine.forget(e->worker);
                    break;
                case TraceEventKind::resumed:
                    engine.forget(e->worker);
                    engine.resumed(e->time);
                    break;
                case TraceEventKind::exited:
                case TraceEventKind::action:
                    break;
            }
            flush();
            if (e->kind == TraceEventKind::exited || e->kind == TraceEventKind::decision) {
                ReplayItem item = item_of(*e);
                item.kind = ReplayItem::Kind::happened;
                item.after_divergence = result.diverged_at_wall_ms.has_value();
                result.items.push_back(std::move(item));
            }
            continue;
        }
        flush();
        const auto& round = std::get<TraceRound>(entry);
        if (result.rounds++ == 0) result.first_wall_ms = round.wall_ms;
        result.last_wall_ms = round.wall_ms;
        in_round = true;
        std::vector<WorkerCandidate> candidates;
        for (const auto& w : round.workers) {
            for (auto& d :
                 engine.evaluate(w.name, w.sample, round.time, w.candidate.preempt.checkpoint_took))
                simulated.push_back(item_of(d, round.wall_ms));
            auto phase = engine.phase_of(w.name);
            if (w.phase && phase) ++result.phases_compared;
            if (w.phase && phase && *phase != *w.phase && result.phase_differences++ == 0)
                result.first_phase_difference =
                    ReplayItem{ReplayItem::Kind::happened,
                               round.wall_ms,
                               w.name,
                               "",
                               "",
                               false,
                               "the replay judges the run " + std::string(phase_name(*phase)) +
                                   ", the daemon judged it " + std::string(phase_name(*w.phase))};
            WorkerCandidate c = w.candidate;
            c.name = w.name;
            if (setup.adjust_candidate) setup.adjust_candidate(c);
            candidates.push_back(std::move(c));
        }
        for (auto& d : engine.evaluate_host(round.host, candidates, round.time))
            simulated.push_back(item_of(d, round.wall_ms));
    }
    flush();
    return result;
}

}  // namespace infervisor
