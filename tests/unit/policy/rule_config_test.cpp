#include "policy/rule_config.h"

#include <gtest/gtest.h>

namespace infervisor {
namespace {

using namespace std::chrono_literals;

struct Parsed {
    std::vector<RuleSpec> rules;
    ConfigErrors errors;
};

Parsed parse(const std::string& yaml, const char* key = "rules") {
    Parsed p;
    p.errors.set_file("workers.d/llama.yaml");
    YAML::Node root = YAML::Load(yaml);
    p.rules = std::string(key) == "rules" ? parse_rules(root[key], p.errors)
                                          : parse_host_rules(root[key], p.errors);
    return p;
}

const char* kExample = R"(rules:
  - name: runaway-growth
    when: memory.growth > 15%/min for 2m
    action: kill
    then: restart
  - name: stuck
    when: heartbeat missed
    action: kill
  - name: pressure
    when: memory.pressure.some.avg10 > 40% for 10s
    action: throttle
    throttle_to: 80%
    escalate_after: 30s
    escalate_to: kill
  - name: chatty
    when: cpu.usage > 95% for 10m
    action: log
    cooldown: 5m
    dry_run: true
)";

TEST(RuleConfig, ParsesTheDocumentedExample) {
    auto p = parse(kExample);
    ASSERT_TRUE(p.errors.empty()) << p.errors.format();
    ASSERT_EQ(p.rules.size(), 4u);
    const RuleSpec& growth = p.rules[0];
    EXPECT_EQ(growth.name, "runaway-growth");
    EXPECT_EQ(growth.when.metric, "memory.growth");
    EXPECT_EQ(growth.when.hold, 2min);
    EXPECT_EQ(growth.action, Action::kill);
    EXPECT_EQ(growth.then, Then::restart);
    EXPECT_EQ(growth.place.line, 2);
    EXPECT_EQ(growth.place.file, "workers.d/llama.yaml");
    EXPECT_EQ(p.rules[1].when.unit, MetricUnit::flag);
    EXPECT_EQ(p.rules[1].then, Then::worker_policy);
    const RuleSpec& pressure = p.rules[2];
    EXPECT_EQ(pressure.action, Action::throttle);
    EXPECT_EQ(pressure.throttle_to.percent, 80.0);
    EXPECT_EQ(pressure.escalate_after, 30s);
    EXPECT_EQ(pressure.escalate_to, Action::kill);
    EXPECT_EQ(p.rules[3].cooldown, 5min);
    EXPECT_TRUE(p.rules[3].dry_run);
    ConfigErrors errors;
    validate_rules(p.rules, errors);
    EXPECT_TRUE(errors.empty()) << errors.format();
}

TEST(RuleConfig, ParsesHostRules) {
    auto p = parse(R"(host_rules:
  - name: host-thrash
    when: host.swap.in > 0 for 30s
    action: kill
    throttle_to: 2G
)",
                   "host_rules");
    ASSERT_TRUE(p.errors.empty()) << p.errors.format();
    EXPECT_EQ(p.rules[0].when.metric, "host.swap.in");
    EXPECT_EQ(p.rules[0].throttle_to.bytes, 2ull << 30);
}

TEST(RuleConfig, ConditionErrorsPointAtTheWhenValue) {
    auto p = parse(R"(rules:
  - name: typo
    when: memory.grwoth > 15%/min
    action: kill
  - name: units
    when: memory.growth > 15% for 2m
    action: kill
)");
    ASSERT_EQ(p.errors.all().size(), 2u) << p.errors.format();
    const auto& first = p.errors.all()[0];
    EXPECT_EQ(first.file, "workers.d/llama.yaml");
    EXPECT_EQ(first.line, 3);
    EXPECT_EQ(first.column, 11);
    EXPECT_EQ(first.message,
              "'when' in rule 'typo': unknown metric 'memory.grwoth' (did you mean "
              "'memory.growth'?)");
    EXPECT_EQ(
        p.errors.all()[1].format(),
        "workers.d/llama.yaml:6:11: 'when' in rule 'units': 'memory.growth' is measured in a "
        "percentage per minute (e.g. 15%/min) or a size per minute (e.g. 100M/min), not '15%'");
}

TEST(RuleConfig, HostMetricInWorkerRulesIsAnError) {
    auto p = parse("rules:\n  - {name: x, when: host.swap.in > 0, action: log}\n");
    ASSERT_EQ(p.errors.all().size(), 1u);
    EXPECT_NE(p.errors.all()[0].message.find("host metric: use it under host_rules"),
              std::string::npos);
}

TEST(RuleConfig, PreemptIsAHostRuleAction) {
    auto host = parse(
        "host_rules:\n  - {name: low, when: host.mem.available < 5%, action: preempt, then: "
        "park}\n",
        "host_rules");
    ASSERT_TRUE(host.errors.empty()) << host.errors.format();
    ASSERT_EQ(host.rules.size(), 1u);
    EXPECT_EQ(host.rules[0].action, Action::preempt);
    ConfigErrors validation;
    validate_rules(host.rules, validation);
    EXPECT_TRUE(validation.empty()) << validation.format();

    auto worker = parse("rules:\n  - {name: x, when: runtime > 1h, action: preempt}\n");
    ASSERT_EQ(worker.errors.all().size(), 1u);
    EXPECT_EQ(worker.errors.all()[0].format(),
              "workers.d/llama.yaml:2:43: 'action: preempt' is for host_rules (it chooses how the "
              "host's victim is put aside); a worker's rule names its action: suspend, checkpoint "
              "or kill");
}

// A preempt's gentlest step is a suspension: it escalates from below that,
// and a checkpoint or a suspension does not escalate to it.
TEST(RuleConfig, PreemptStandsWithSuspendOnTheLadder) {
    auto p = parse(R"(host_rules:
  - {name: a, when: host.swap.in > 0, action: freeze, escalate_after: 1m, escalate_to: preempt}
  - {name: b, when: host.swap.in > 0, action: preempt, escalate_after: 1m, escalate_to: kill}
  - {name: c, when: host.swap.in > 0, action: checkpoint, escalate_after: 1m, escalate_to: preempt}
  - {name: d, when: host.swap.in > 0, action: suspend, escalate_after: 1m, escalate_to: preempt}
)",
                   "host_rules");
    ASSERT_TRUE(p.errors.empty()) << p.errors.format();
    ConfigErrors errors;
    validate_rules(p.rules, errors);
    std::string all = errors.format();
    ASSERT_EQ(errors.all().size(), 2u) << all;
    EXPECT_NE(all.find(":4:5: rule 'c': 'escalate_to: preempt' must be further up the ladder "
                       "(log, throttle, freeze, suspend or preempt, checkpoint, kill) than "
                       "'action: checkpoint'"),
              std::string::npos)
        << all;
    EXPECT_NE(all.find(":5:5: rule 'd': 'escalate_to: preempt' must be further up"),
              std::string::npos)
        << all;
}

TEST(RuleConfig, ReportsBadKeysAndValues) {
    auto p = parse(R"(rules:
  - name: a
    when: runtime > 2h
    action: explode
    then: reboot
    throttle_to: 150%
    escalate_after: soon
    colldown: 5m
  - when: runtime > 1h
    action: kill
)");
    std::string all = p.errors.format();
    EXPECT_NE(all.find(":4:13: 'action' must be one of log, throttle, freeze, suspend, checkpoint, "
                       "preempt, kill; "
                       "not 'explode'"),
              std::string::npos)
        << all;
    EXPECT_NE(all.find(":5:11: 'then' must be restart, park or keep_running, not 'reboot'"),
              std::string::npos)
        << all;
    EXPECT_NE(all.find(":6:18: 'throttle_to' must be a percentage between 0% and 100%"),
              std::string::npos)
        << all;
    EXPECT_NE(all.find(":7:21: 'escalate_after': invalid duration 'soon'"), std::string::npos)
        << all;
    EXPECT_NE(all.find(":8:5: unknown key 'colldown' in rule 'a' (did you mean 'cooldown'?)"),
              std::string::npos)
        << all;
    EXPECT_NE(all.find(":9:5: rule is missing required key 'name'"), std::string::npos) << all;
}

TEST(RuleConfig, RulesMustBeAListOfMappings) {
    auto p = parse("rules:\n  name: x\n");
    ASSERT_EQ(p.errors.all().size(), 1u);
    EXPECT_NE(p.errors.all()[0].message.find("must be a list"), std::string::npos);
    auto empty = parse("rules:\n");
    EXPECT_TRUE(empty.errors.empty());
    EXPECT_TRUE(empty.rules.empty());
}

TEST(RuleConfig, ValidationChecksWhatNoSingleKeyCan) {
    auto p = parse(R"(rules:
  - {name: a, when: runtime > 2h, action: kill}
  - {name: a, when: runtime > 3h, action: kill}
  - {name: b, when: runtime > 2h, action: throttle, escalate_to: kill}
  - {name: c, when: runtime > 2h, action: kill, escalate_after: 1m, escalate_to: freeze}
  - {name: d, when: runtime > 2h, action: freeze, then: park}
  - {name: e, when: runtime > 2h, action: throttle, escalate_after: 1m, escalate_to: kill, then: park}
)");
    ASSERT_TRUE(p.errors.empty()) << p.errors.format();
    ConfigErrors errors;
    validate_rules(p.rules, errors);
    std::string all = errors.format();
    EXPECT_NE(all.find("workers.d/llama.yaml:3:5: duplicate rule name 'a'"), std::string::npos)
        << all;
    EXPECT_NE(all.find(":4:5: rule 'b': 'escalate_after' and 'escalate_to' go together"),
              std::string::npos)
        << all;
    EXPECT_NE(all.find(":5:5: rule 'c': 'escalate_to: freeze' must be further up the ladder"),
              std::string::npos)
        << all;
    EXPECT_NE(all.find(":6:5: rule 'd': 'then: park' needs 'kill'"), std::string::npos) << all;
    EXPECT_EQ(errors.all().size(), 4u) << all;
}

TEST(RuleConfig, ACheckpointTakesThenAndOnlyItKeepsRunning) {
    auto p = parse(R"(rules:
  - {name: a, when: runtime > 2h, action: checkpoint, then: restart}
  - {name: b, when: runtime > 2h, action: checkpoint, then: keep_running}
  - {name: c, when: runtime > 2h, action: throttle, escalate_after: 1m, escalate_to: checkpoint, then: park}
  - {name: d, when: runtime > 2h, action: kill, then: keep_running}
  - {name: e, when: runtime > 2h, action: checkpoint, then: later}
)");
    ASSERT_EQ(p.errors.all().size(), 1u) << p.errors.format();
    EXPECT_NE(p.errors.format().find(":6:"), std::string::npos) << p.errors.format();
    EXPECT_NE(p.errors.format().find("'then' must be restart, park or keep_running, not 'later'"),
              std::string::npos)
        << p.errors.format();
    EXPECT_EQ(p.rules[1].then, Then::keep_running);
    ConfigErrors errors;
    validate_rules(p.rules, errors);
    std::string all = errors.format();
    ASSERT_EQ(errors.all().size(), 1u) << all;
    EXPECT_NE(all.find(":5:5: rule 'd': 'then: keep_running' needs 'action: checkpoint'"),
              std::string::npos)
        << all;
}

TEST(RuleConfig, ADisabledRuleNeedsNoCondition) {
    auto p = parse("rules:\n  - {name: stuck, enabled: false}\n");
    ASSERT_TRUE(p.errors.empty()) << p.errors.format();
    EXPECT_FALSE(p.rules[0].enabled);
}

TEST(RuleConfig, MergeReplacesRemovesAndAppends) {
    auto defaults = parse(R"(rules:
  - {name: stuck, when: heartbeat missed, action: kill}
  - {name: growth, when: memory.growth > 15%/min for 2m, action: kill}
  - {name: long, when: runtime > 2h, action: log}
)")
                        .rules;
    auto own = parse(R"(rules:
  - {name: extra, when: cpu.time > 1h, action: kill}
  - {name: growth, when: memory.growth > 50%/min for 1m, action: freeze}
  - {name: stuck, enabled: false}
)")
                   .rules;
    auto merged = merge_rules(defaults, own);
    ASSERT_EQ(merged.size(), 3u);
    EXPECT_EQ(merged[0].name, "growth");
    EXPECT_EQ(merged[0].action, Action::freeze);
    EXPECT_EQ(merged[1].name, "long");
    EXPECT_EQ(merged[2].name, "extra");
}

TEST(RuleConfig, EqualityIgnoresWhereARuleWasWritten) {
    auto a = parse("rules:\n  - {name: x, when: runtime > 2h, action: log}\n").rules;
    auto b = parse("\n\nrules:\n    - {name: x, when: runtime > 2h, action: log}\n").rules;
    EXPECT_NE(a[0].place.line, b[0].place.line);
    EXPECT_EQ(a[0], b[0]);
    b[0].action = Action::kill;
    EXPECT_FALSE(a[0] == b[0]);
}

}  // namespace
}  // namespace infervisor
