// The exposition parser on what llama-server and vLLM really serve
// (fixtures/, see fixtures/README.md for the sources), on the format's
// corners (escapes, NaN and Inf, timestamps) and on every malformed line,
// reported with its number.
#include "engine/prometheus_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "engine_answers.h"
#include "support/temp_dir.h"

namespace infervisor {
namespace {

using ::testing::HasSubstr;

PrometheusValues parsed(std::string_view text, const PrometheusWanted& wanted) {
    auto values = parse_prometheus_text(text, wanted);
    EXPECT_TRUE(values.ok()) << values.error().message();
    return values.value_or({});
}

std::string error_of(std::string_view text, const PrometheusWanted& wanted = {"a"}) {
    auto values = parse_prometheus_text(text, wanted);
    EXPECT_FALSE(values.ok()) << text;
    return values.ok() ? std::string() : values.error().message();
}

TEST(PrometheusText, LlamaServersMetrics) {
    auto values = parsed(testing::engine_fixture("llama-server-metrics.txt"),
                         {"llamacpp:tokens_predicted_total", "llamacpp:requests_processing",
                          "llamacpp:requests_deferred", "llamacpp:prompt_tokens_total",
                          "llamacpp:n_busy_slots_per_decode",
                          "llamacpp:spec_decode_num_accepted_tokens_per_pos_total",
                          "llamacpp:kv_cache_usage_ratio"});
    EXPECT_EQ(values.at("llamacpp:tokens_predicted_total"), 3469);
    EXPECT_EQ(values.at("llamacpp:requests_processing"), 2);
    EXPECT_EQ(values.at("llamacpp:requests_deferred"), 5);
    EXPECT_EQ(values.at("llamacpp:prompt_tokens_total"), 1.23457e+06);
    EXPECT_DOUBLE_EQ(values.at("llamacpp:n_busy_slots_per_decode"), 1.71429);
    // Summed over its label sets (the draft positions).
    EXPECT_EQ(values.at("llamacpp:spec_decode_num_accepted_tokens_per_pos_total"), 520);
    // Asked for, not served (a name of older llama-servers): absent, not 0.
    EXPECT_FALSE(values.contains("llamacpp:kv_cache_usage_ratio"));
    EXPECT_EQ(values.size(), 6u);  // nothing not asked for is kept
}

TEST(PrometheusText, VllmsMetricsSumTheEngines) {
    auto values = parsed(testing::engine_fixture("vllm-metrics.txt"),
                         {"vllm:generation_tokens_total", "vllm:num_requests_waiting",
                          "vllm:num_requests_running", "vllm:kv_cache_usage_perc",
                          "vllm:time_to_first_token_seconds_count", "vllm:cache_config_info"});
    EXPECT_EQ(values.at("vllm:generation_tokens_total"), 91873 + 1127);
    EXPECT_EQ(values.at("vllm:num_requests_waiting"), 12);
    EXPECT_EQ(values.at("vllm:num_requests_running"), 0);
    EXPECT_EQ(values.at("vllm:kv_cache_usage_perc"), 0.4375);
    EXPECT_EQ(values.at("vllm:time_to_first_token_seconds_count"), 326);
    EXPECT_EQ(values.at("vllm:cache_config_info"), 1);
    EXPECT_EQ(values.size(), 6u);
    // The family's name is not a series: a histogram is read by its _count, _sum, _bucket.
    EXPECT_FALSE(
        parsed(testing::engine_fixture("vllm-metrics.txt"), {"vllm:time_to_first_token_seconds"})
            .size());
}

TEST(PrometheusText, EscapesInLabelValuesAreReadNotKept) {
    auto values = parsed(
        "a{path=\"C:\\\\dir\\\\\",quote=\"say \\\"hi\\\"\",nl=\"one\\ntwo\",} 1\n"
        "a{brace=\"}\",comma=\",\",hash=\"#\"} 2\n"
        "a { spaced = \"x\" , } 3\n",
        {"a"});
    EXPECT_EQ(values.at("a"), 6);
}

TEST(PrometheusText, SpecialValuesTimestampsAndLineEnds) {
    auto values = parsed(
        "nan NaN\ninf +Inf\nminus -Inf\nts 5 1712345678000\nneg_ts 1 -12\r\n"
        "exp 1.5e3\nplus +2\n\t  \n# just a comment\n#\n# EOF\nlast 7",
        {"nan", "inf", "minus", "ts", "neg_ts", "exp", "plus", "last"});
    EXPECT_TRUE(std::isnan(values.at("nan")));
    EXPECT_EQ(values.at("inf"), INFINITY);
    EXPECT_EQ(values.at("minus"), -INFINITY);
    EXPECT_EQ(values.at("ts"), 5);
    EXPECT_EQ(values.at("neg_ts"), 1);
    EXPECT_EQ(values.at("exp"), 1500);
    EXPECT_EQ(values.at("plus"), 2);
    EXPECT_EQ(values.at("last"), 7);  // no newline at the end
}

TEST(PrometheusText, ANaNMakesTheSumNaN) {
    auto values = parsed("a{x=\"1\"} 1\na{x=\"2\"} NaN\n", {"a"});
    EXPECT_TRUE(std::isnan(values.at("a")));
}

TEST(PrometheusText, EveryMalformedLineIsAnErrorWithItsNumber) {
    EXPECT_EQ(error_of("a 1\nb{x=\"1\\q\"} 2\n"), "line 2: unknown escape '\\q' in a label value");
    EXPECT_EQ(error_of("a{x=\"open} 1\n"), "line 1: label value without its closing quote");
    EXPECT_EQ(error_of("a{x=1} 1"), "line 1: a label value must be quoted");
    EXPECT_EQ(error_of("a{x \"1\"} 1"), "line 1: no '=' after a label name");
    EXPECT_EQ(error_of("a{1x=\"1\"} 1"), "line 1: bad label name");
    EXPECT_EQ(error_of("a{x:y=\"1\"} 1"), "line 1: no '=' after a label name");
    EXPECT_EQ(error_of("a{x=\"1\" y=\"2\"} 1"), "line 1: no ',' or '}' after a label value");
    EXPECT_EQ(error_of("a{x=\"1\"}"), "line 1: a sample without a value");
    EXPECT_EQ(error_of("\n\na one"), "line 3: bad sample value 'one'");
    EXPECT_EQ(error_of("a 0x10"), "line 1: bad sample value '0x10'");
    EXPECT_EQ(error_of("a ++1"), "line 1: bad sample value '++1'");
    EXPECT_EQ(error_of("a 1e999"), "line 1: bad sample value '1e999'");
    EXPECT_EQ(error_of("a 1 12.5"), "line 1: bad timestamp '12.5'");
    EXPECT_EQ(error_of("a 1 12 extra"), "line 1: text after the timestamp");
    EXPECT_EQ(error_of("1a 1"), "line 1: a sample must start with a metric name");
    EXPECT_EQ(error_of("a-b 1"), "line 1: bad sample value '-b'");
    EXPECT_EQ(error_of("# TYPE a countr"), "line 1: unknown metric type 'countr'");
    EXPECT_EQ(error_of("# TYPE a counter x"), "line 1: text after the metric type");
    EXPECT_EQ(error_of("# TYPE"), "line 1: # TYPE without a metric name");
    EXPECT_EQ(error_of("# HELP a-b text"), "line 1: bad metric name in # HELP");
    EXPECT_EQ(error_of("a \x01\x02"),
              "line 1: bad sample value '?"
              "?'");
}

TEST(PrometheusText, AnErrorAnywhereLosesTheWholeText) {
    // No value from a text with an error is used: the scrape failed.
    auto values = parse_prometheus_text("a 1\nb 2\n!\n", {"a", "b"});
    ASSERT_FALSE(values.ok());
    EXPECT_EQ(values.error().message(), "line 3: a sample must start with a metric name");
}

TEST(PrometheusText, TheBoundsHold) {
    PrometheusLimits limits{.max_line = 64, .max_names = 2};
    auto long_line = parse_prometheus_text("a 1\n# " + std::string(63, 'x') + "\n", {"a"}, limits);
    ASSERT_FALSE(long_line.ok());
    EXPECT_EQ(long_line.error().message(), "line 2 is longer than 64 bytes");
    auto exact = parse_prometheus_text("# " + std::string(62, 'x') + "\na 1", {"a"}, limits);
    EXPECT_TRUE(exact.ok());
    auto names = parse_prometheus_text("a 1", {"a", "b", "c"}, limits);
    ASSERT_FALSE(names.ok());
    EXPECT_EQ(names.error().message(), "more than 2 metric names asked for");
}

TEST(PrometheusText, ManyLabelSetsCostOneNumber) {
    std::string text;
    for (int i = 0; i < 20000; ++i)
        text +=
            "a{id=\"" + std::to_string(i) + "\"} 1\nnoise{id=\"" + std::to_string(i) + "\"} 1\n";
    auto values = parsed(text, {"a"});
    EXPECT_EQ(values.size(), 1u);
    EXPECT_EQ(values.at("a"), 20000);
}

TEST(PrometheusText, MetricNames) {
    EXPECT_TRUE(is_prometheus_metric_name("llamacpp:tokens_predicted_total"));
    EXPECT_TRUE(is_prometheus_metric_name("_a:b9"));
    EXPECT_FALSE(is_prometheus_metric_name(""));
    EXPECT_FALSE(is_prometheus_metric_name("9a"));
    EXPECT_FALSE(is_prometheus_metric_name("a-b"));
    EXPECT_FALSE(is_prometheus_metric_name("a{x=\"1\"}"));
}

}  // namespace
}  // namespace infervisor
