#include "policy/condition.h"

#include <gtest/gtest.h>

namespace infervisor {
namespace {

using namespace std::chrono_literals;

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

TEST(Condition, UnknownMetricListsTheKnownOnes) {
    auto e = parse_error("memory.grwoth > 15%/min");
    EXPECT_NE(e.find("unknown metric 'memory.grwoth'"), std::string::npos) << e;
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
                  .find("expected a comparison (>, >=, <, <=) after "
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

}  // namespace
}  // namespace infervisor
