#include "policy/rule_spec.h"

#include <tuple>

namespace infervisor {

std::string_view to_string(Action action) {
    switch (action) {
        case Action::log:
            return "log";
        case Action::throttle:
            return "throttle";
        case Action::freeze:
            return "freeze";
        case Action::suspend:
            return "suspend";
        case Action::checkpoint:
            return "checkpoint";
        case Action::preempt:
            return "preempt";
        case Action::unload:
            return "unload";
        case Action::kill:
            return "kill";
    }
    return "?";
}

std::string_view to_string(Then then) {
    switch (then) {
        case Then::worker_policy:
            return "worker-policy";
        case Then::restart:
            return "restart";
        case Then::park:
            return "park";
        case Then::keep_running:
            return "keep_running";
    }
    return "?";
}

// Action::unload is not among them: only the preempt ladder takes it.
std::optional<Action> parse_action(std::string_view text) {
    for (Action a : {Action::log, Action::throttle, Action::freeze, Action::suspend,
                     Action::checkpoint, Action::preempt, Action::kill})
        if (to_string(a) == text) return a;
    return std::nullopt;
}

std::optional<Then> parse_then(std::string_view text) {
    for (Then t : {Then::restart, Then::park, Then::keep_running})
        if (to_string(t) == text) return t;
    return std::nullopt;
}

bool RuleSpec::operator==(const RuleSpec& o) const {
    auto identity = [](const RuleSpec& r) {
        return std::tie(r.name, r.enabled, r.when, r.action, r.then, r.throttle_to,
                        r.escalate_after, r.escalate_to, r.cooldown, r.dry_run);
    };
    return identity(*this) == identity(o);
}

}  // namespace infervisor
