#include "policy/condition.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

namespace infervisor {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

Condition parse_ok(std::string_view text, RuleScope scope = RuleScope::worker) {
    auto c = parse_condition(text, scope);
    EXPECT_TRUE(c.ok()) << text << ": " << (c.ok() ? "" : c.error().what);
    return c.ok() ? *c : Condition{};
}

std::string parse_error(std::string_view text, RuleScope scope = RuleScope::worker) {
    auto c = parse_condition(text, scope);
    EXPECT_FALSE(c.ok()) << text;
    return c.ok() ? "" : c.error().what;
}

TEST(Condition, ParsesPressureWithHold) {
    auto c = parse_ok("memory.pressure.some.avg10 > 40% for 10s");
    EXPECT_EQ(c.metric, "memory.pressure.some.avg10");
    EXPECT_EQ(c.unit, MetricUnit::percent);
    EXPECT_EQ(c.op, Comparison::greater);
    EXPECT_DOUBLE_EQ(c.threshold, 40.0);
    EXPECT_EQ(c.hold, 10s);
    EXPECT_EQ(c.threshold_text, "40%");
    EXPECT_EQ(c.text, "memory.pressure.some.avg10 > 40% for 10s");
}

TEST(Condition, ParsesEachUnit) {
    auto growth = parse_ok("memory.growth > 15%/min for 2m");
    EXPECT_EQ(growth.unit, MetricUnit::percent_per_min);
    EXPECT_DOUBLE_EQ(growth.threshold, 15.0);
    EXPECT_EQ(growth.hold, 2min);
    EXPECT_EQ(parse_ok("memory.growth >= 100M/min").unit, MetricUnit::bytes_per_min);
    auto swap = parse_ok("swap.in > 0 for 30s");
    EXPECT_EQ(swap.unit, MetricUnit::pages_per_second);
    EXPECT_DOUBLE_EQ(parse_ok("swap.out > 2.5/s").threshold, 2.5);
    auto runtime = parse_ok("runtime > 2h");
    EXPECT_EQ(runtime.unit, MetricUnit::duration);
    EXPECT_DOUBLE_EQ(runtime.threshold, 7'200'000.0);
    EXPECT_EQ(runtime.hold, 0ms);
    EXPECT_DOUBLE_EQ(parse_ok("cpu.time > 1h").threshold, 3'600'000.0);
    EXPECT_EQ(parse_ok("memory.events.oom_kill >= 1").unit, MetricUnit::count);
}

TEST(Condition, TheValueChoosesBetweenAMetricsUnits) {
    auto bytes = parse_ok("memory.current > 2G");
    EXPECT_EQ(bytes.unit, MetricUnit::bytes);
    EXPECT_DOUBLE_EQ(bytes.threshold, 2.0 * (1 << 30));
    auto percent = parse_ok("memory.current > 90%");
    EXPECT_EQ(percent.unit, MetricUnit::percent);
    auto host = parse_ok("host.mem.available < 5%", RuleScope::host);
    EXPECT_EQ(host.unit, MetricUnit::percent);
    EXPECT_EQ(host.op, Comparison::less);
    EXPECT_EQ(parse_ok("host.mem.available <= 512M", RuleScope::host).unit, MetricUnit::bytes);
}

TEST(Condition, HeartbeatMissedIsAPhrase) {
    auto c = parse_ok("heartbeat missed");
    EXPECT_EQ(c.metric, "heartbeat missed");
    EXPECT_EQ(c.unit, MetricUnit::flag);
    EXPECT_EQ(parse_ok("heartbeat missed for 5s").hold, 5s);
    EXPECT_NE(parse_error("heartbeat missed for").find("expected METRIC OP VALUE"),
              std::string::npos);
}

TEST(Condition, AMisspeltMetricNamesTheOneMeant) {
    EXPECT_EQ(parse_error("memory.grwoth > 15%/min"),
              "unknown metric 'memory.grwoth' (did you mean 'memory.growth'?)");
    EXPECT_EQ(parse_error("swap.ot > 0"), "unknown metric 'swap.ot' (did you mean 'swap.out'?)");
}

TEST(Condition, AnUnknownMetricFarFromAnyListsTheKnownOnes) {
    auto e = parse_error("temperature > 15");
    EXPECT_NE(e.find("unknown metric 'temperature'; known metrics: "), std::string::npos) << e;
    EXPECT_NE(e.find("memory.growth"), std::string::npos) << e;
    EXPECT_NE(e.find("heartbeat missed"), std::string::npos) << e;
    EXPECT_EQ(e.find("host.swap.in"), std::string::npos) << "host metrics are not worker metrics";
}

TEST(Condition, MetricsStayInTheirScope) {
    EXPECT_NE(parse_error("host.swap.in > 0").find("is a host metric: use it under host_rules"),
              std::string::npos);
    EXPECT_NE(parse_error("swap.in > 0", RuleScope::host).find("is a worker metric"),
              std::string::npos);
    EXPECT_NE(parse_error("heartbeat missed", RuleScope::host).find("unknown metric 'heartbeat'"),
              std::string::npos);
}

TEST(Condition, UnitMismatchNamesTheExpectedUnit) {
    EXPECT_EQ(parse_error("memory.growth > 15%"),
              "'memory.growth' is measured in a percentage per minute (e.g. 15%/min) or a size "
              "per minute (e.g. 100M/min), not '15%'");
    EXPECT_EQ(parse_error("memory.pressure.some.avg10 > 40"),
              "'memory.pressure.some.avg10' is measured in a percentage (e.g. 40%), not '40'");
    EXPECT_NE(parse_error("runtime > 2").find("a duration (e.g. 90s, 2h)"), std::string::npos);
    EXPECT_NE(parse_error("memory.current > max").find("not 'max'"), std::string::npos);
}

TEST(Condition, ReportsGrammarErrors) {
    EXPECT_NE(parse_error("").find("empty condition"), std::string::npos);
    EXPECT_NE(parse_error("runtime >").find("incomplete condition"), std::string::npos);
    EXPECT_NE(parse_error("runtime = 2h")
                  .find("expected a comparison (>, >=, <, <=, ==, !=) after "
                        "'runtime', not '='"),
              std::string::npos);
    EXPECT_NE(parse_error("runtime > 2h during 5m").find("unexpected 'during'"), std::string::npos);
    EXPECT_NE(parse_error("runtime > 2h for ever").find("after 'for': invalid duration 'ever'"),
              std::string::npos);
}

TEST(Condition, ComparesAndTreatsAbsentAsFalse) {
    auto gt = parse_ok("memory.current > 90%");
    EXPECT_TRUE(condition_holds(gt, 91.0));
    EXPECT_FALSE(condition_holds(gt, 90.0));
    EXPECT_FALSE(condition_holds(gt, std::nullopt));
    auto le = parse_ok("memory.current <= 90%");
    EXPECT_TRUE(condition_holds(le, 90.0));
    EXPECT_FALSE(condition_holds(le, std::nullopt));
}

Condition host_ok(const std::string& text) {
    auto c = parse_condition(text, RuleScope::host);
    EXPECT_TRUE(c.ok()) << text << ": " << (c.ok() ? "" : c.error().what);
    return c.ok() ? *c : Condition{};
}

std::string host_error(const std::string& text) {
    auto c = parse_condition(text, RuleScope::host);
    EXPECT_FALSE(c.ok()) << text;
    return c.ok() ? "" : c.error().what;
}

// Measures each leaf from a table of metric names.
MeasureComparison table(std::map<std::string, std::optional<double>> values) {
    return [values](const Condition& leaf) -> std::optional<double> {
        auto it = values.find(leaf.metric);
        return it == values.end() ? std::nullopt : it->second;
    };
}

TEST(CompoundCondition, AndBindsTighterThanOr) {
    auto c = host_ok(
        "host.mem.available < 10% and host.swap.free < 10% or host.mem.available < 5% and "
        "host.mem.headroom < 10s for 2s");
    ASSERT_EQ(c.kind, Condition::Kind::any_of);
    ASSERT_EQ(c.operands.size(), 2u);
    for (const auto& conj : c.operands) {
        EXPECT_EQ(conj.kind, Condition::Kind::all_of);
        EXPECT_EQ(conj.operands.size(), 2u);
        EXPECT_EQ(conj.hold, 0s) << "the `for` is the root's";
    }
    EXPECT_EQ(c.hold, 2s) << "one `for` at the end binds to the whole expression";
    EXPECT_EQ(c.operands[0].operands[1].text, "host.swap.free < 10%");
    EXPECT_EQ(c.operands[1].operands[1].metric, "host.mem.headroom");
    EXPECT_EQ(c.operands[1].operands[1].unit, MetricUnit::duration);
    EXPECT_DOUBLE_EQ(c.operands[1].operands[1].threshold, 10'000.0);
    auto leaves = comparisons(c);
    ASSERT_EQ(leaves.size(), 4u);
    EXPECT_EQ(leaves[0]->metric, "host.mem.available");
    EXPECT_EQ(leaves[3]->metric, "host.mem.headroom");
    EXPECT_TRUE(mentions_metric(c, "host.swap."));
    EXPECT_FALSE(mentions_metric(c, "host.cpu."));

    // a and b or c: true with c alone, or with a and b; not with a alone.
    EXPECT_TRUE(
        condition_holds(c, table({{"host.mem.available", 4.0}, {"host.mem.headroom", 9000.0}})));
    EXPECT_TRUE(condition_holds(c, table({{"host.mem.available", 9.0}, {"host.swap.free", 0.0}})));
    EXPECT_FALSE(
        condition_holds(c, table({{"host.mem.available", 9.0}, {"host.swap.free", 50.0}})));
    EXPECT_FALSE(condition_holds(c, table({{"host.mem.available", 4.0}})))
        << "an unknown headroom (not falling) is false";
}

TEST(CompoundCondition, ASingleComparisonStaysALeaf) {
    auto c = host_ok("host.mem.available < 10%");
    EXPECT_EQ(c.kind, Condition::Kind::compare);
    EXPECT_FALSE(c.is_compound());
    EXPECT_EQ(comparisons(c).size(), 1u);
    EXPECT_EQ(c.text, "host.mem.available < 10%");
}

TEST(CompoundCondition, EqualityOperators) {
    auto eq = parse_ok("memory.events.oom_kill == 0 and runtime > 1h");
    ASSERT_EQ(eq.operands.size(), 2u);
    EXPECT_EQ(eq.operands[0].op, Comparison::equal);
    EXPECT_TRUE(condition_holds(eq.operands[0], 0.0));
    EXPECT_FALSE(condition_holds(eq.operands[0], 1.0));
    auto ne = parse_ok("memory.events.oom_kill != 0");
    EXPECT_EQ(ne.op, Comparison::not_equal);
    EXPECT_TRUE(condition_holds(ne, 2.0));
    EXPECT_FALSE(condition_holds(ne, 0.0));
    EXPECT_FALSE(condition_holds(ne, std::nullopt));
    EXPECT_EQ(to_string(Comparison::equal), "==");
    EXPECT_EQ(to_string(Comparison::not_equal), "!=");
}

TEST(CompoundCondition, HeartbeatMissedJoinsToo) {
    auto c = parse_ok("heartbeat missed and runtime > 10m for 5s");
    ASSERT_EQ(c.operands.size(), 2u);
    EXPECT_EQ(c.operands[0].metric, "heartbeat missed");
    EXPECT_EQ(c.operands[0].text, "heartbeat missed");
    EXPECT_EQ(c.hold, 5s);
    EXPECT_TRUE(mentions_metric(c, "heartbeat"));
}

// Every error class, each message complete in itself.
TEST(CompoundCondition, ReportsEveryGrammarError) {
    EXPECT_THAT(host_error("host.mem.available < 10% and"),
                HasSubstr("'and' at the end: a comparison must follow it"));
    EXPECT_THAT(host_error("host.mem.available < 10% or"),
                HasSubstr("'or' at the end: a comparison must follow it"));
    EXPECT_THAT(host_error("and host.mem.available < 10%"),
                HasSubstr("expected a metric, not 'and'"));
    EXPECT_THAT(host_error("host.mem.available < 10% and or host.swap.free < 1%"),
                HasSubstr("expected a metric, not 'or'"));
    EXPECT_THAT(host_error("host.mem.available < 10% and for 5s"),
                HasSubstr("expected a metric, not 'for'"));
    EXPECT_THAT(host_error("host.mem.available < 10% for 5s and host.swap.free < 1%"),
                HasSubstr("'for' binds to the whole condition and is written once, at its end; "
                          "nothing may follow 'for 5s', not 'and'"));
    EXPECT_THAT(host_error("host.mem.available < 10% for 5s for 6s"),
                HasSubstr("nothing may follow 'for 5s', not 'for'"));
    EXPECT_THAT(host_error("host.mem.available < 10% for"), HasSubstr("'for' needs a duration"));
    EXPECT_THAT(host_error("host.mem.available < 10% for 2d"), HasSubstr("at most 1d, not 2d"));
    EXPECT_THAT(host_error("host.mem.available < 10% and host.swap.free"),
                HasSubstr("incomplete condition: a comparison (>, >=, <, <=, ==, !=) must follow "
                          "'host.swap.free'"));
    EXPECT_THAT(host_error("host.mem.available < and host.swap.free < 1%"),
                HasSubstr("incomplete condition: a value must follow 'host.mem.available <'"));
    EXPECT_THAT(host_error("host.mem.available = 10%"),
                HasSubstr("expected a comparison (>, >=, <, <=, ==, !=) after "
                          "'host.mem.available', not '='"));
    EXPECT_THAT(host_error("host.mem.available < 10% nand host.swap.free < 1%"),
                HasSubstr("unexpected 'nand' after 'host.mem.available < 10%': expected 'and', "
                          "'or' or 'for'"));
    EXPECT_THAT(host_error("host.mem.available < 10% and host.swap.fre < 1%"),
                HasSubstr("unknown metric 'host.swap.fre' (did you mean 'host.swap.free'?)"));
    EXPECT_THAT(host_error("host.mem.available < 10% and swap.in > 0"),
                HasSubstr("'swap.in' is a worker metric"));
    EXPECT_THAT(
        host_error("host.mem.available < 10% and host.mem.headroom < 10%"),
        HasSubstr("'host.mem.headroom' is measured in a duration (e.g. 90s, 2h), not '10%'"));
    EXPECT_THAT(
        host_error("(host.mem.available < 10% or host.swap.free < 1%) and host.swap.in > 0"),
        HasSubstr("no parentheses in conditions: 'and' binds tighter than 'or'"));
    EXPECT_THAT(host_error("host.mem.available<10%"),
                HasSubstr("put spaces around the comparison: 'host.mem.available < 10%', not "
                          "'host.mem.available<10%'"));
    std::string many = "host.swap.in > 0";
    for (int i = 0; i < 16; ++i) many += " or host.swap.in > 0";
    EXPECT_THAT(host_error(many), HasSubstr("more than 16 comparisons in one condition"));
    std::string sixteen = "host.swap.in > 0";
    for (int i = 0; i < 15; ++i) sixteen += " or host.swap.in > 0";
    EXPECT_EQ(comparisons(host_ok(sixteen)).size(), 16u);
}

TEST(HostMetrics, HeadroomAndSwapFree) {
    HostSample s;
    s.mem_total = 1000 * 1024 * 1024ull;
    s.mem_available = 100 * 1024 * 1024ull;
    const double mib_per_min = 60.0 * 1024 * 1024;
    // Falling 20 MiB/s: 100 MiB last 5 s.
    EXPECT_EQ(host_mem_headroom(s, -20 * mib_per_min), 5s);
    EXPECT_FALSE(host_mem_headroom(s, 0.0)) << "steady: empty";
    EXPECT_FALSE(host_mem_headroom(s, 3 * mib_per_min)) << "rising: empty";
    EXPECT_FALSE(host_mem_headroom(s, std::nullopt)) << "no rate yet";
    s.mem_available = 0;
    EXPECT_EQ(host_mem_headroom(s, -1.0), 0s);

    EXPECT_FALSE(host_swap_free_percent(s)) << "meminfo without swap lines";
    s.swap_total = 0;
    s.swap_free = 0;
    EXPECT_EQ(host_swap_free_percent(s), 0.0) << "no swap: none free, as earlyoom counts it";
    s.swap_total = 400;
    s.swap_free = 100;
    EXPECT_EQ(host_swap_free_percent(s), 25.0);

    const HostMetric* headroom = find_host_metric("host.mem.headroom", MetricUnit::duration);
    ASSERT_NE(headroom, nullptr);
    EXPECT_EQ(headroom->info.journal_key, "HOST_MEM_HEADROOM_SECONDS");
    s.mem_available = 100 * 1024 * 1024ull;
    HostInputs in{s, std::nullopt, std::nullopt, -20 * mib_per_min};
    EXPECT_EQ(headroom->measure(in), 5000.0);
    const HostMetric* free_bytes = find_host_metric("host.swap.free", MetricUnit::bytes);
    ASSERT_NE(free_bytes, nullptr);
    EXPECT_EQ(free_bytes->measure(in), 100.0);
    EXPECT_EQ(find_host_metric("host.swap.free", MetricUnit::percent)->measure(in), 25.0);
    EXPECT_EQ(parse_condition("host.swap.free < 64M", RuleScope::host)->unit, MetricUnit::bytes);
}

TEST(Condition, EngineSeriesAndTheirRates) {
    auto c = parse_ok(
        "engine.rate(llamacpp:tokens_predicted_total) == 0 and "
        "engine.llamacpp:requests_processing > 0 for 2m");
    ASSERT_EQ(c.kind, Condition::Kind::all_of);
    ASSERT_EQ(c.operands.size(), 2u);
    const Condition& rate = c.operands[0];
    EXPECT_EQ(rate.metric, "engine.rate(llamacpp:tokens_predicted_total)");
    EXPECT_EQ(rate.engine_series, "llamacpp:tokens_predicted_total");
    EXPECT_TRUE(rate.engine_rate);
    EXPECT_EQ(rate.unit, MetricUnit::number);
    EXPECT_EQ(rate.op, Comparison::equal);
    EXPECT_DOUBLE_EQ(rate.threshold, 0.0);
    const Condition& gauge = c.operands[1];
    EXPECT_EQ(gauge.engine_series, "llamacpp:requests_processing");
    EXPECT_FALSE(gauge.engine_rate);
    EXPECT_EQ(c.hold, 2min);  // `for` binds to the whole expression
    EXPECT_DOUBLE_EQ(parse_ok("engine.vllm:kv_cache_usage_perc >= 0.95").threshold, 0.95);
    EXPECT_THAT(engine_series_of(c), ::testing::ElementsAre("llamacpp:tokens_predicted_total",
                                                            "llamacpp:requests_processing"));
    EXPECT_THAT(engine_series_of(parse_ok("engine.a > 1 or engine.rate(a) > 2 or runtime > 1h")),
                ::testing::ElementsAre("a"));
    EXPECT_TRUE(engine_series_of(parse_ok("runtime > 1h")).empty());
}

TEST(Condition, EngineSeriesErrorsSayHowToWriteThem) {
    EXPECT_THAT(parse_error("engine.vllm:num_requests_waiting > 0", RuleScope::host),
                HasSubstr("use it under a worker's rules"));
    EXPECT_THAT(parse_error("engine.rate(a > 0"), HasSubstr("with the closing parenthesis"));
    EXPECT_THAT(parse_error("engine.a{engine=\"0\"} > 0"), HasSubstr("no label selectors"));
    EXPECT_THAT(parse_error("engine.9a > 0"), HasSubstr("'9a' is not a Prometheus metric name"));
    EXPECT_THAT(parse_error("engine. > 0"), HasSubstr("'' is not a Prometheus metric name"));
    EXPECT_THAT(parse_error("engine.a>0"),
                HasSubstr("put spaces around the comparison: 'engine.a > 0'"));
    EXPECT_THAT(parse_error("engine.a > 5%"),
                HasSubstr("'engine.a' is measured in a plain number (e.g. 0, 2 or 0.9), not '5%'"));
    EXPECT_THAT(parse_error("engine.a > -1"), HasSubstr("a plain number"));
}

}  // namespace
}  // namespace infervisor
