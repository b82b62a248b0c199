// Exposition: the Prometheus text format (version 0.0.4), as node_exporter's
// textfile collector and a Prometheus scrape read it.
//
// A family is written as "# HELP name text", "# TYPE name type", then one
// line per series: name{label="value",...} value. Families must not repeat;
// every series of a family follows its TYPE line; label values are escaped
// (\\, \", \n), HELP text too (\\, \n). Names are checked against
// [a-zA-Z_:][a-zA-Z0-9_:]* (labels: [a-zA-Z_][a-zA-Z0-9_]*, not "__"-prefixed):
// every name here is a constant of the daemon, so a bad one is a programming
// error and throws std::logic_error, which the unit tests catch.
// Values: integers exactly up to 2^53, others with 17 significant digits;
// NaN and infinities as Prometheus spells them (NaN, +Inf, -Inf).
// A summary is written without quantiles: name_sum and name_count per series
// (the mean is rate(name_sum) / rate(name_count)).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace infervisor {

enum class MetricType { gauge, counter, summary };

using Label = std::pair<std::string_view, std::string_view>;
using Labels = std::vector<Label>;

// Rendering takes no allocation per series (labels are passed as a list or
// span, values are formatted in place); `expected_size` reserves the text
// (the size of the last rendering) so it is not grown step by step.
class Exposition {
  public:
    explicit Exposition(size_t expected_size = 0) { text_.reserve(expected_size); }

    // Starts a family; the series added next belong to it.
    void family(std::string_view name, MetricType type, std::string_view help);
    // One series of the current family. A counter's name ends in "_total".
    void sample(std::span<const Label> labels, double value);
    void sample(std::initializer_list<Label> labels, double value) {
        sample(std::span<const Label>(labels.begin(), labels.size()), value);
    }
    void sample(double value) { sample(std::span<const Label>(), value); }
    // One series of the current family, a summary: its _sum and _count.
    void summary(std::span<const Label> labels, double sum, uint64_t count);
    void summary(std::initializer_list<Label> labels, double sum, uint64_t count) {
        summary(std::span<const Label>(labels.begin(), labels.size()), sum, count);
    }

    const std::string& text() const { return text_; }
    std::string take() { return std::move(text_); }

  private:
    void series(std::string_view suffix, std::span<const Label> labels, double value);

    std::string text_;
    std::string current_;
    MetricType current_type_ = MetricType::gauge;
    std::set<std::string, std::less<>> families_;
};

// For tests and callers that build text by hand.
std::string escape_label_value(std::string_view value);
std::string escape_help(std::string_view help);
std::string format_sample_value(double value);
bool valid_metric_name(std::string_view name);
bool valid_label_name(std::string_view name);

}  // namespace infervisor
