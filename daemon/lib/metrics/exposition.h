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
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace infervisor {

enum class MetricType { gauge, counter };

using Labels = std::vector<std::pair<std::string_view, std::string_view>>;

class Exposition {
  public:
    // Starts a family; the series added next belong to it.
    void family(std::string_view name, MetricType type, std::string_view help);
    // One series of the current family. A counter's name ends in "_total".
    void sample(const Labels& labels, double value);
    void sample(double value) { sample({}, value); }

    const std::string& text() const { return text_; }
    std::string take() { return std::move(text_); }

  private:
    std::string text_;
    std::string current_;
    std::set<std::string, std::less<>> families_;
};

// For tests and callers that build text by hand.
std::string escape_label_value(std::string_view value);
std::string escape_help(std::string_view help);
std::string format_sample_value(double value);
bool valid_metric_name(std::string_view name);
bool valid_label_name(std::string_view name);

}  // namespace infervisor
