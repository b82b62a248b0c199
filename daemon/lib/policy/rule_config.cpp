#include "policy/rule_config.h"

#include <algorithm>
#include <charconv>
#include <set>

#include "yaml/yaml_map.h"

namespace infervisor {

namespace {

std::string rule_label(const YAML::Node& item) {
    if (item.IsMap() && item["name"] && item["name"].IsScalar())
        return "rule '" + item["name"].Scalar().substr(0, 64) + "'";
    return "rule";
}

void read_when(YamlMap& map, RuleSpec& rule, RuleScope scope, ConfigErrors& errors,
               Required required) {
    auto node = map.take("when", required);
    if (!node) return;
    auto text = YamlMap::scalar(*node, errors, "'when' in rule '" + rule.name + "'");
    if (!text) return;
    auto condition = parse_condition(*text, scope);
    if (!condition) {
        errors.add(node->Mark(), "'when' in rule '" + rule.name + "': " + condition.error().what);
        return;
    }
    rule.when = *condition;
}

std::optional<Action> read_action(YamlMap& map, const std::string& key, RuleScope scope,
                                  ConfigErrors& errors, Required required) {
    std::string text;
    if (!map.get_string(key, text, required)) return std::nullopt;
    auto action = parse_action(text);
    if (!action) {
        errors.add(map.take(key)->Mark(), "'" + key +
                                              "' must be one of log, throttle, freeze, "
                                              "suspend, checkpoint, preempt, kill; not '" +
                                              text + "'");
    } else if (*action == Action::preempt && scope == RuleScope::worker) {
        // It weighs the host's free swap and time left against the victim.
        errors.add(map.take(key)->Mark(), "'" + key +
                                              ": preempt' is for host_rules (it chooses how the "
                                              "host's victim is put aside); a worker's rule "
                                              "names its action: suspend, checkpoint or kill");
        return std::nullopt;
    }
    return action;
}

void read_then(YamlMap& map, RuleSpec& rule, ConfigErrors& errors) {
    std::string text;
    if (!map.get_string("then", text)) return;
    auto then = parse_then(text);
    if (!then) {
        errors.add(map.take("then")->Mark(),
                   "'then' must be restart, park or keep_running, not '" + text + "'");
        return;
    }
    rule.then = *then;
}

// "80%" or a size such as "2G".
void read_throttle_to(YamlMap& map, RuleSpec& rule, ConfigErrors& errors) {
    std::string text;
    if (!map.get_string("throttle_to", text)) return;
    auto where = map.take("throttle_to")->Mark();
    if (!text.empty() && text.back() == '%') {
        double percent = 0;
        auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size() - 1, percent,
                                         std::chars_format::fixed);
        if (ec != std::errc() || ptr != text.data() + text.size() - 1 || percent <= 0 ||
            percent >= 100) {
            errors.add(where,
                       "'throttle_to' must be a percentage between 0% and 100% "
                       "(exclusive) or a size, not '" +
                           text + "'");
            return;
        }
        rule.throttle_to = ThrottleTarget{percent, std::nullopt};
        return;
    }
    auto size = parse_size(text);
    if (!size || !*size) {
        errors.add(where,
                   "'throttle_to' must be a percentage (e.g. 80%) or a size (e.g. 2G), "
                   "not '" +
                       text + "'");
        return;
    }
    rule.throttle_to = ThrottleTarget{std::nullopt, **size};
}

RuleSpec parse_rule(const YAML::Node& item, ConfigErrors& errors, RuleScope scope) {
    RuleSpec rule;
    rule.place = {errors.file(), item.Mark().line + 1, item.Mark().column + 1};
    YamlMap map(item, errors, rule_label(item));
    if (!map.valid()) return rule;
    map.get_string("name", rule.name, Required::yes);
    map.get_bool("enabled", rule.enabled);
    Required needed = rule.enabled ? Required::yes : Required::no;
    read_when(map, rule, scope, errors, needed);
    if (auto action = read_action(map, "action", scope, errors, needed)) rule.action = *action;
    read_then(map, rule, errors);
    read_throttle_to(map, rule, errors);
    Duration d{};
    if (map.get_duration("escalate_after", d, Required::no, std::chrono::hours(24)))
        rule.escalate_after = d;
    rule.escalate_to = read_action(map, "escalate_to", scope, errors, Required::no);
    if (map.get_duration("cooldown", d, Required::no, std::chrono::hours(24))) rule.cooldown = d;
    map.get_bool("dry_run", rule.dry_run);
    map.finish();
    return rule;
}

// A kill ends the run; so does a checkpoint unless `then: keep_running`, and
// a preempt that becomes one of them.
bool ends_run(const RuleSpec& rule) {
    auto ends = [](Action a) {
        return a == Action::kill || a == Action::checkpoint || a == Action::preempt;
    };
    return ends(rule.action) || (rule.escalate_to && ends(*rule.escalate_to));
}

// Where an action stands on the ladder, for escalate_to. A preempt's
// gentlest step is a suspension, so it stands with suspend: escalating from
// a checkpoint to a preempt could step down.
int ladder_rank(Action a) {
    switch (a) {
        case Action::log:
            return 0;
        case Action::throttle:
            return 1;
        case Action::freeze:
            return 2;
        case Action::unload:
        case Action::suspend:
        case Action::preempt:
            return 3;
        case Action::checkpoint:
            return 4;
        case Action::kill:
            return 5;
    }
    return 0;
}

void validate_rule(const RuleSpec& rule, ConfigErrors& errors) {
    auto fail = [&](const std::string& message) {
        errors.add_at(rule.place.file, rule.place.line, rule.place.column,
                      "rule '" + rule.name + "': " + message);
    };
    if (!rule.enabled) return;
    if (rule.escalate_after.has_value() != rule.escalate_to.has_value())
        fail("'escalate_after' and 'escalate_to' go together: give both or neither");
    if (rule.escalate_to && ladder_rank(*rule.escalate_to) <= ladder_rank(rule.action))
        fail("'escalate_to: " + std::string(to_string(*rule.escalate_to)) +
             "' must be further up the ladder (log, throttle, freeze, suspend or preempt, "
             "checkpoint, kill) than 'action: " +
             std::string(to_string(rule.action)) + "'");
    if (rule.then == Then::keep_running && rule.action != Action::checkpoint)
        fail("'then: keep_running' needs 'action: checkpoint'");
    else if (rule.then != Then::worker_policy && !ends_run(rule))
        fail("'then: " + std::string(to_string(rule.then)) +
             "' needs 'kill' or 'checkpoint' as the action or the escalation");
    if (rule.cooldown && *rule.cooldown <= Duration::zero()) fail("'cooldown' must be positive");
}

}  // namespace

std::vector<RuleSpec> parse_rules(const YAML::Node& node, ConfigErrors& errors, RuleScope scope) {
    std::vector<RuleSpec> rules;
    if (!node || node.IsNull()) return rules;
    if (!node.IsSequence()) {
        errors.add(node.Mark(), std::string(scope == RuleScope::worker ? "rules" : "host_rules") +
                                    " must be a list of rules (mappings with name, when, action)");
        return rules;
    }
    if (!check_item_count(node, kMaxRules, errors,
                          scope == RuleScope::worker ? "'rules'" : "'host_rules'"))
        return rules;
    for (const auto& item : node) rules.push_back(parse_rule(item, errors, scope));
    return rules;
}

std::vector<RuleSpec> parse_host_rules(const YAML::Node& node, ConfigErrors& errors) {
    return parse_rules(node, errors, RuleScope::host);
}

void validate_rules(const std::vector<RuleSpec>& rules, ConfigErrors& errors) {
    std::set<std::string> seen;
    for (const auto& rule : rules) {
        if (!rule.name.empty() && !seen.insert(rule.name).second)
            errors.add_at(rule.place.file, rule.place.line, rule.place.column,
                          "duplicate rule name '" + rule.name + "'");
        validate_rule(rule, errors);
    }
}

std::vector<RuleSpec> merge_rules(const std::vector<RuleSpec>& defaults,
                                  const std::vector<RuleSpec>& own) {
    auto find_own = [&](const std::string& name) {
        return std::find_if(own.begin(), own.end(),
                            [&](const RuleSpec& r) { return r.name == name; });
    };
    std::vector<RuleSpec> out;
    for (const auto& rule : defaults) {
        auto mine = find_own(rule.name);
        const RuleSpec& chosen = mine == own.end() ? rule : *mine;
        if (chosen.enabled) out.push_back(chosen);
    }
    for (const auto& rule : own) {
        bool overrides = std::any_of(defaults.begin(), defaults.end(),
                                     [&](const RuleSpec& d) { return d.name == rule.name; });
        if (!overrides && rule.enabled) out.push_back(rule);
    }
    return out;
}

}  // namespace infervisor
