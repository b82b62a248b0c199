#include "policy/condition.h"

#include <charconv>
#include <vector>

#include "base/units.h"

namespace infervisor {

namespace {

constexpr std::string_view kGrammar =
    "expected METRIC OP VALUE [for DURATION], e.g. 'memory.growth > 15%/min for 2m'";

std::vector<std::string_view> split_words(std::string_view text) {
    std::vector<std::string_view> words;
    size_t pos = 0;
    while (pos < text.size()) {
        while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t')) ++pos;
        size_t end = pos;
        while (end < text.size() && text[end] != ' ' && text[end] != '\t') ++end;
        if (end > pos) words.push_back(text.substr(pos, end - pos));
        pos = end;
    }
    return words;
}

std::optional<Comparison> parse_op(std::string_view word) {
    if (word == ">") return Comparison::greater;
    if (word == ">=") return Comparison::greater_equal;
    if (word == "<") return Comparison::less;
    if (word == "<=") return Comparison::less_equal;
    return std::nullopt;
}

// A non-negative decimal number that is the whole of `text`.
std::optional<double> parse_number(std::string_view text) {
    double value = 0;
    auto [ptr, ec] =
        std::from_chars(text.data(), text.data() + text.size(), value, std::chars_format::fixed);
    if (ec != std::errc() || ptr != text.data() + text.size() || value < 0) return std::nullopt;
    return value;
}

bool strip_suffix(std::string_view& text, std::string_view suffix) {
    if (text.size() <= suffix.size() || text.substr(text.size() - suffix.size()) != suffix)
        return false;
    text.remove_suffix(suffix.size());
    return true;
}

std::optional<double> parse_bytes(std::string_view text) {
    auto size = parse_size(text);
    if (!size || !*size) return std::nullopt;  // "max" is no threshold
    return static_cast<double>(**size);
}

// Reads `text` as a threshold of `unit`; empty when it is not written so.
std::optional<double> parse_threshold(std::string_view text, MetricUnit unit) {
    switch (unit) {
        case MetricUnit::percent:
            return strip_suffix(text, "%") ? parse_number(text) : std::nullopt;
        case MetricUnit::percent_per_min:
            return strip_suffix(text, "%/min") || strip_suffix(text, "%/m") ? parse_number(text)
                                                                            : std::nullopt;
        case MetricUnit::bytes:
            return parse_bytes(text);
        case MetricUnit::bytes_per_min:
            return strip_suffix(text, "/min") || strip_suffix(text, "/m") ? parse_bytes(text)
                                                                          : std::nullopt;
        case MetricUnit::pages_per_second:
            if (!strip_suffix(text, "pages/s")) strip_suffix(text, "/s");
            return parse_number(text);
        case MetricUnit::duration: {
            auto d = parse_duration(text);
            if (!d) return std::nullopt;
            return static_cast<double>(d->count());
        }
        case MetricUnit::count:
            return parse_number(text);
        case MetricUnit::flag:
            return std::nullopt;
    }
    return std::nullopt;
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
    std::string out;
    for (const auto& item : items) out += (out.empty() ? "" : std::string(sep)) + item;
    return out;
}

Error unknown_metric(std::string_view name, RuleScope scope) {
    std::string quoted = "'" + std::string(name) + "'";
    RuleScope other = scope == RuleScope::worker ? RuleScope::host : RuleScope::worker;
    if (!metrics_named(other, name).empty())
        return plain_error(quoted + (scope == RuleScope::worker
                                         ? " is a host metric: use it under host_rules"
                                         : " is a worker metric: use it under a worker's rules"));
    return plain_error("unknown metric " + quoted +
                       "; known metrics: " + join(metric_names(scope), ", "));
}

Error unit_mismatch(std::string_view name, const std::vector<MetricInfo>& candidates,
                    std::string_view value) {
    std::vector<std::string> units;
    for (const auto& c : candidates) units.push_back(describe_unit(c.unit));
    return plain_error("'" + std::string(name) + "' is measured in " + join(units, " or ") +
                       ", not '" + std::string(value) + "'");
}

// Parses the optional "for DURATION" tail.
Result<Duration> parse_hold(const std::vector<std::string_view>& tail) {
    if (tail.empty()) return Duration(0);
    if (tail[0] != "for" || tail.size() != 2)
        return plain_error("unexpected '" + std::string(tail[0]) +
                           "' after the value: " + std::string(kGrammar));
    auto d = parse_duration(tail[1]);
    if (!d) return plain_error("after 'for': " + d.error().what);
    // A condition held longer than a day is no condition a policy acts on.
    if (*d > std::chrono::hours(24))
        return plain_error("after 'for': at most 1d, not " + std::string(tail[1]));
    return *d;
}

Result<Condition> parse_heartbeat_missed(const std::vector<std::string_view>& words) {
    auto hold = parse_hold({words.begin() + 2, words.end()});
    if (!hold) return hold.error();
    Condition c;
    c.metric = "heartbeat missed";
    c.unit = MetricUnit::flag;
    c.op = Comparison::greater;
    c.threshold = 0;
    c.hold = *hold;
    return c;
}

}  // namespace

std::string_view to_string(Comparison op) {
    switch (op) {
        case Comparison::greater:
            return ">";
        case Comparison::greater_equal:
            return ">=";
        case Comparison::less:
            return "<";
        case Comparison::less_equal:
            return "<=";
    }
    return "?";
}

Result<Condition> parse_condition(std::string_view text, RuleScope scope) {
    auto words = split_words(text);
    if (words.empty()) return plain_error("empty condition: " + std::string(kGrammar));
    Result<Condition> parsed = plain_error("");
    if (scope == RuleScope::worker && words.size() >= 2 && words[0] == "heartbeat" &&
        words[1] == "missed") {
        parsed = parse_heartbeat_missed(words);
    } else {
        auto candidates = metrics_named(scope, words[0]);
        if (candidates.empty()) return unknown_metric(words[0], scope);
        if (words.size() < 3) return plain_error("incomplete condition: " + std::string(kGrammar));
        auto op = parse_op(words[1]);
        if (!op)
            return plain_error("expected a comparison (>, >=, <, <=) after '" +
                               std::string(words[0]) + "', not '" + std::string(words[1]) + "'");
        Condition c;
        c.metric = std::string(words[0]);
        c.op = *op;
        bool matched = false;
        for (const auto& candidate : candidates) {
            if (auto value = parse_threshold(words[2], candidate.unit)) {
                c.unit = candidate.unit;
                c.threshold = *value;
                matched = true;
                break;
            }
        }
        if (!matched) return unit_mismatch(words[0], candidates, words[2]);
        c.threshold_text = std::string(words[2]);
        auto hold = parse_hold({words.begin() + 3, words.end()});
        if (!hold) return hold.error();
        c.hold = *hold;
        parsed = c;
    }
    if (!parsed) return parsed;
    parsed->text = std::string(text);
    return parsed;
}

bool condition_holds(const Condition& c, std::optional<double> value) {
    if (!value) return false;
    switch (c.op) {
        case Comparison::greater:
            return *value > c.threshold;
        case Comparison::greater_equal:
            return *value >= c.threshold;
        case Comparison::less:
            return *value < c.threshold;
        case Comparison::less_equal:
            return *value <= c.threshold;
    }
    return false;
}

}  // namespace infervisor
