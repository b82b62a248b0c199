#include "engine/prometheus_text.h"

#include <charconv>

namespace infervisor {

namespace {

bool is_name_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9'); }
bool is_label_start(char c) { return is_name_start(c) && c != ':'; }
bool is_label_char(char c) { return is_name_char(c) && c != ':'; }
bool is_blank(char c) { return c == ' ' || c == '\t'; }

// One line, read left to right by one cursor: every byte is looked at once.
class LineReader {
  public:
    explicit LineReader(std::string_view line) : line_(line) {}

    bool at_end() const { return at_ == line_.size(); }
    char peek() const { return at_end() ? '\0' : line_[at_]; }
    bool take(char c) {
        if (peek() != c || at_end()) return false;
        ++at_;
        return true;
    }
    void skip_blanks() {
        while (!at_end() && is_blank(line_[at_])) ++at_;
    }
    // A run of non-blank bytes (a value, a timestamp, a TYPE).
    std::string_view word() {
        size_t from = at_;
        while (!at_end() && !is_blank(line_[at_])) ++at_;
        return line_.substr(from, at_ - from);
    }
    std::string_view metric_name() {
        size_t from = at_;
        if (!at_end() && is_name_start(line_[at_]))
            while (!at_end() && is_name_char(line_[at_])) ++at_;
        return line_.substr(from, at_ - from);
    }
    std::string_view label_name() {
        size_t from = at_;
        if (!at_end() && is_label_start(line_[at_]))
            while (!at_end() && is_label_char(line_[at_])) ++at_;
        return line_.substr(from, at_ - from);
    }
    // The rest of a quoted label value up to its closing quote; checks the
    // escapes the format knows (\\, \", \n). Empty when well-formed.
    std::string quoted_rest() {
        while (!at_end()) {
            char c = line_[at_++];
            if (c == '"') return {};
            if (c != '\\') continue;
            if (at_end()) break;
            char e = line_[at_++];
            if (e != '\\' && e != '"' && e != 'n')
                return "unknown escape '\\" + std::string(1, printable(e)) + "' in a label value";
        }
        return "label value without its closing quote";
    }

    static char printable(char c) {
        return static_cast<unsigned char>(c) < ' ' || static_cast<unsigned char>(c) >= 0x7f ? '?'
                                                                                            : c;
    }

  private:
    std::string_view line_;
    size_t at_ = 0;
};

std::string shown(std::string_view text) {
    std::string out(text.substr(0, 40));
    for (char& c : out) c = LineReader::printable(c);
    return out;
}

// A sample value as Go's strconv.ParseFloat reads the format's values:
// decimal or exponent notation, an optional sign, NaN and Inf (any case). A
// number beyond a double's range is refused.
bool parse_value(std::string_view text, double& out) {
    bool negative = false;
    if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
        negative = text.front() == '-';
        text.remove_prefix(1);
    }
    if (text.empty() || text.front() == '+' || text.front() == '-') return false;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    if (ec != std::errc() || end != text.data() + text.size()) return false;
    if (negative) out = -out;
    return true;
}

bool parse_timestamp(std::string_view text) {
    int64_t ms = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), ms);
    return ec == std::errc() && end == text.data() + text.size();
}

bool is_type(std::string_view type) {
    return type == "counter" || type == "gauge" || type == "histogram" || type == "summary" ||
           type == "untyped";
}

// "# HELP name text", "# TYPE name type", or any other comment.
std::string comment_problem(LineReader& line) {
    line.take('#');
    line.skip_blanks();
    std::string_view keyword = line.word();
    if (keyword != "HELP" && keyword != "TYPE") return {};  // a plain comment
    line.skip_blanks();
    std::string_view name = line.metric_name();
    if (name.empty()) return "# " + std::string(keyword) + " without a metric name";
    if (!line.at_end() && !is_blank(line.peek()))
        return "bad metric name in # " + std::string(keyword);
    if (keyword == "HELP") return {};  // the docstring is free text
    line.skip_blanks();
    std::string_view type = line.word();
    if (!is_type(type)) return "unknown metric type '" + shown(type) + "'";
    line.skip_blanks();
    if (!line.at_end()) return "text after the metric type";
    return {};
}

// {name="value",...}; a trailing comma is allowed, as Prometheus' parser does.
std::string labels_problem(LineReader& line) {
    line.skip_blanks();
    if (line.take('}')) return {};
    for (;;) {
        if (line.label_name().empty()) return "bad label name";
        line.skip_blanks();
        if (!line.take('=')) return "no '=' after a label name";
        line.skip_blanks();
        if (!line.take('"')) return "a label value must be quoted";
        if (auto problem = line.quoted_rest(); !problem.empty()) return problem;
        line.skip_blanks();
        if (line.take('}')) return {};
        if (!line.take(',')) return "no ',' or '}' after a label value";
        line.skip_blanks();
        if (line.take('}')) return {};
    }
}

// name[{labels}] value [timestamp]; a wanted name's value is added to `values`.
std::string sample_problem(LineReader& line, const PrometheusWanted& wanted,
                           PrometheusValues& values) {
    std::string_view name = line.metric_name();
    if (name.empty()) return "a sample must start with a metric name";
    line.skip_blanks();
    if (line.take('{'))
        if (auto problem = labels_problem(line); !problem.empty()) return problem;
    line.skip_blanks();
    std::string_view value_text = line.word();
    if (value_text.empty()) return "a sample without a value";
    double value = 0;
    if (!parse_value(value_text, value)) return "bad sample value '" + shown(value_text) + "'";
    line.skip_blanks();
    if (!line.at_end()) {
        std::string_view timestamp = line.word();
        if (!parse_timestamp(timestamp)) return "bad timestamp '" + shown(timestamp) + "'";
        line.skip_blanks();
        if (!line.at_end()) return "text after the timestamp";
    }
    if (wanted.contains(name)) {
        auto [at, inserted] = values.try_emplace(std::string(name), 0.0);
        at->second += value;
    }
    return {};
}

std::string line_problem(std::string_view text, const PrometheusWanted& wanted,
                         PrometheusValues& values) {
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    LineReader line(text);
    line.skip_blanks();
    if (line.at_end()) return {};
    if (line.peek() == '#') return comment_problem(line);
    return sample_problem(line, wanted, values);
}

}  // namespace

bool is_prometheus_metric_name(std::string_view name) {
    if (name.empty() || !is_name_start(name.front())) return false;
    for (char c : name)
        if (!is_name_char(c)) return false;
    return true;
}

Result<PrometheusValues> parse_prometheus_text(std::string_view text,
                                               const PrometheusWanted& wanted,
                                               const PrometheusLimits& limits) {
    if (wanted.size() > limits.max_names)
        return plain_error("more than " + std::to_string(limits.max_names) +
                           " metric names asked for");
    PrometheusValues values;
    size_t number = 0;
    while (!text.empty()) {
        ++number;
        size_t eol = text.find('\n');
        std::string_view line = text.substr(0, eol);
        text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
        if (line.size() > limits.max_line)
            return plain_error("line " + std::to_string(number) + " is longer than " +
                               std::to_string(limits.max_line) + " bytes");
        if (auto problem = line_problem(line, wanted, values); !problem.empty())
            return plain_error("line " + std::to_string(number) + ": " + problem);
    }
    return values;
}

}  // namespace infervisor
