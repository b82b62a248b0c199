#include "metrics/exposition.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace infervisor {
namespace {

TEST(Exposition, HelpTypeThenSeries) {
    Exposition out;
    out.family("infervisor_worker_memory_bytes", MetricType::gauge, "Memory used.");
    out.sample({{"worker", "llama"}}, 1048576);
    out.sample({{"worker", "chat"}}, 0);
    out.family("infervisor_daemon_evaluations_total", MetricType::counter, "Rounds.");
    out.sample(42);
    EXPECT_EQ(out.text(),
              "# HELP infervisor_worker_memory_bytes Memory used.\n"
              "# TYPE infervisor_worker_memory_bytes gauge\n"
              "infervisor_worker_memory_bytes{worker=\"llama\"} 1048576\n"
              "infervisor_worker_memory_bytes{worker=\"chat\"} 0\n"
              "# HELP infervisor_daemon_evaluations_total Rounds.\n"
              "# TYPE infervisor_daemon_evaluations_total counter\n"
              "infervisor_daemon_evaluations_total 42\n");
}

TEST(Exposition, LabelValuesAreEscaped) {
    EXPECT_EQ(escape_label_value(R"(a\b"c)"
                                 "\n"
                                 "d"),
              R"(a\\b\"c\nd)");
    Exposition out;
    out.family("x", MetricType::gauge, "h");
    out.sample({{"reason", "killed by \"rule\"\nback\\slash"}, {"w", ""}}, 1);
    EXPECT_EQ(out.text(),
              "# HELP x h\n# TYPE x gauge\n"
              "x{reason=\"killed by \\\"rule\\\"\\nback\\\\slash\",w=\"\"} 1\n");
}

TEST(Exposition, HelpEscapesBackslashAndNewlineButNotQuotes) {
    EXPECT_EQ(escape_help("a \"b\" c\\d\ne"), "a \"b\" c\\\\d\\ne");
}

TEST(Exposition, ValuesKeepIntegersExactAndSpellSpecials) {
    EXPECT_EQ(format_sample_value(0), "0");
    EXPECT_EQ(format_sample_value(17179869184.0), "17179869184");
    EXPECT_EQ(format_sample_value(0.25), "0.25");
    EXPECT_EQ(format_sample_value(-3), "-3");
    EXPECT_EQ(format_sample_value(std::nan("")), "NaN");
    EXPECT_EQ(format_sample_value(std::numeric_limits<double>::infinity()), "+Inf");
    EXPECT_EQ(format_sample_value(-std::numeric_limits<double>::infinity()), "-Inf");
    EXPECT_EQ(std::stod(format_sample_value(0.1)), 0.1);  // round-trips
}

TEST(Exposition, NamesFollowThePrometheusGrammar) {
    EXPECT_TRUE(valid_metric_name("infervisor_worker_memory_bytes"));
    EXPECT_TRUE(valid_metric_name("a:b"));
    EXPECT_FALSE(valid_metric_name("9lives"));
    EXPECT_FALSE(valid_metric_name("memory.current"));
    EXPECT_FALSE(valid_metric_name(""));
    EXPECT_TRUE(valid_label_name("worker"));
    EXPECT_FALSE(valid_label_name("__name__"));
    EXPECT_FALSE(valid_label_name("a:b"));
    EXPECT_FALSE(valid_label_name("a-b"));
}

TEST(Exposition, ASummaryIsItsSumAndCountWithoutQuantiles) {
    Exposition out;
    out.family("infervisor_worker_checkpoint_duration_seconds", MetricType::summary, "Time.");
    out.summary({{"worker", "llama"}}, 4.5, 3);
    EXPECT_EQ(out.text(),
              "# HELP infervisor_worker_checkpoint_duration_seconds Time.\n"
              "# TYPE infervisor_worker_checkpoint_duration_seconds summary\n"
              "infervisor_worker_checkpoint_duration_seconds_sum{worker=\"llama\"} 4.5\n"
              "infervisor_worker_checkpoint_duration_seconds_count{worker=\"llama\"} 3\n");
    // A summary's series only through summary(), and summary() only in a summary.
    EXPECT_THROW(out.sample(1), std::logic_error);
    out.family("g", MetricType::gauge, "h");
    EXPECT_THROW(out.summary({}, 1, 1), std::logic_error);
    EXPECT_THROW(out.family("s_count", MetricType::summary, "h"), std::logic_error);
    EXPECT_THROW(out.family("s_total", MetricType::summary, "h"), std::logic_error);
}

TEST(Exposition, MistakesInTheDaemonsOwnNamesAreCaught) {
    Exposition out;
    EXPECT_THROW(out.sample(1), std::logic_error);  // no family yet
    EXPECT_THROW(out.family("bad name", MetricType::gauge, "h"), std::logic_error);
    EXPECT_THROW(out.family("restarts", MetricType::counter, "h"), std::logic_error);
    EXPECT_THROW(out.family("x_total", MetricType::gauge, "h"), std::logic_error);
    out.family("x", MetricType::gauge, "h");
    EXPECT_THROW(out.family("x", MetricType::gauge, "h"), std::logic_error);
    EXPECT_THROW(out.sample({{"bad-label", "v"}}, 1), std::logic_error);
}

}  // namespace
}  // namespace infervisor
