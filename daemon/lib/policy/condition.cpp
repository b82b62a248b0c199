#include "policy/condition.h"

#include <algorithm>
#include <charconv>
#include <vector>

#include "base/closest_match.h"
#include "base/units.h"
#include "engine/prometheus_text.h"

namespace infervisor {

namespace {

constexpr std::string_view kGrammar =
    "expected METRIC OP VALUE [and|or METRIC OP VALUE ...] [for DURATION], e.g. "
    "'memory.growth > 15%/min for 2m'";

struct Word {
    std::string_view text;
    size_t at;  // offset in the condition
};

std::vector<Word> split_words(std::string_view text) {
    std::vector<Word> words;
    size_t pos = 0;
    while (pos < text.size()) {
        while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t')) ++pos;
        size_t end = pos;
        while (end < text.size() && text[end] != ' ' && text[end] != '\t') ++end;
        if (end > pos) words.push_back({text.substr(pos, end - pos), pos});
        pos = end;
    }
    return words;
}

std::optional<Comparison> parse_op(std::string_view word) {
    if (word == ">") return Comparison::greater;
    if (word == ">=") return Comparison::greater_equal;
    if (word == "<") return Comparison::less;
    if (word == "<=") return Comparison::less_equal;
    if (word == "==") return Comparison::equal;
    if (word == "!=") return Comparison::not_equal;
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
        case MetricUnit::number:
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
    std::vector<std::string> known = metric_names(scope);
    if (auto near = closest_match(name, known))
        return plain_error("unknown metric " + quoted + " (did you mean '" + *near + "'?)");
    return plain_error("unknown metric " + quoted + "; known metrics: " + join(known, ", "));
}

Error unit_mismatch(std::string_view name, const std::vector<MetricInfo>& candidates,
                    std::string_view value) {
    std::vector<std::string> units;
    for (const auto& c : candidates) units.push_back(describe_unit(c.unit));
    return plain_error("'" + std::string(name) + "' is measured in " + join(units, " or ") +
                       ", not '" + std::string(value) + "'");
}

// An operator written without spaces ("memory.growth>15%"): the word as it
// should be written ("memory.growth > 15%"), when it starts with a metric.
std::optional<std::string> glued_operator(std::string_view word, RuleScope scope) {
    size_t op = word.find_first_of("<>=!");
    if (op == std::string_view::npos || op == 0) return std::nullopt;
    if (metrics_named(scope, word.substr(0, op)).empty()) return std::nullopt;
    size_t value = word.find_first_not_of("<>=!", op);
    std::string out =
        std::string(word.substr(0, op)) + " " +
        std::string(
            word.substr(op, value == std::string_view::npos ? std::string_view::npos : value - op));
    if (value != std::string_view::npos) out += " " + std::string(word.substr(value));
    return out;
}

bool is_keyword(std::string_view word) { return word == "and" || word == "or" || word == "for"; }

constexpr std::string_view kEnginePrefix = "engine.";

struct EngineName {
    std::string series;
    bool rate = false;
};

// "engine.NAME" or "engine.rate(NAME)", NAME a Prometheus metric name.
Result<EngineName> parse_engine_metric(std::string_view word, RuleScope scope) {
    const std::string quoted = "'" + std::string(word) + "'";
    if (scope != RuleScope::worker)
        return plain_error(quoted +
                           " is a series of a worker's own metrics endpoint: use it under a "
                           "worker's rules");
    std::string_view name = word.substr(kEnginePrefix.size());
    if (name.find('{') != std::string_view::npos)
        return plain_error(quoted +
                           ": no label selectors; engine.NAME is the sum over all of NAME's "
                           "label sets");
    if (size_t op = word.find_first_of("<>=!"); op != std::string_view::npos) {
        size_t value = word.find_first_not_of("<>=!", op);
        std::string spaced =
            std::string(word.substr(0, op)) + " " + std::string(word.substr(op, value - op));
        if (value != std::string_view::npos) spaced += " " + std::string(word.substr(value));
        return plain_error("put spaces around the comparison: '" + spaced + "', not " + quoted);
    }
    EngineName out;
    if (name.starts_with("rate(")) {
        if (!name.ends_with(")"))
            return plain_error(quoted + ": write engine.rate(NAME), with the closing parenthesis");
        name = name.substr(5, name.size() - 6);
        out.rate = true;
    }
    if (!is_prometheus_metric_name(name))
        return plain_error(quoted + ": '" + std::string(name) +
                           "' is not a Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*); write "
                           "engine.NAME or engine.rate(NAME)");
    out.series = std::string(name);
    return out;
}

// Recursive descent over the words; the first error wins and stops it.
class Parser {
  public:
    Parser(std::string_view text, RuleScope scope)
        : text_(text), words_(split_words(text)), scope_(scope) {}

    Result<Condition> parse() {
        if (words_.empty()) return plain_error("empty condition: " + std::string(kGrammar));
        auto root = disjunction();
        if (!root) return root;
        if (pos_ < words_.size()) {  // only `for` can follow a complete expression
            auto hold = parse_hold();
            if (!hold) return hold.error();
            root->hold = *hold;
        }
        root->text = std::string(text_);
        return root;
    }

  private:
    bool at(std::string_view word) const {
        return pos_ < words_.size() && words_[pos_].text == word;
    }

    Error error_here(const std::string& message) const { return plain_error(message); }

    // Joins operands parsed by `next` while the next word is `keyword`.
    template <class Next>
    Result<Condition> chain(std::string_view keyword, Condition::Kind kind, Next next) {
        auto first = (this->*next)();
        if (!first) return first;
        if (!at(keyword)) return first;
        Condition node;
        node.kind = kind;
        node.operands.push_back(std::move(*first));
        while (at(keyword)) {
            ++pos_;
            if (pos_ == words_.size())
                return error_here("'" + std::string(keyword) +
                                  "' at the end: a comparison must follow it");
            auto operand = (this->*next)();
            if (!operand) return operand;
            node.operands.push_back(std::move(*operand));
        }
        return node;
    }

    Result<Condition> disjunction() {
        return chain("or", Condition::Kind::any_of, &Parser::conjunction);
    }
    Result<Condition> conjunction() {
        return chain("and", Condition::Kind::all_of, &Parser::comparison);
    }

    Result<Condition> comparison() {
        if (++comparisons_ > kMaxComparisons)
            return error_here("more than " + std::to_string(kMaxComparisons) +
                              " comparisons in one condition");
        const Word& first = words_[pos_];
        if (first.text.starts_with("(") || first.text == ")")
            return error_here(
                "no parentheses in conditions: 'and' binds tighter than 'or', so write "
                "'(A or B) and C' as 'A and C or B and C'");
        if (is_keyword(first.text))
            return error_here("expected a metric, not '" + std::string(first.text) +
                              "': " + std::string(kGrammar));
        if (scope_ == RuleScope::worker && first.text == "heartbeat" && pos_ + 1 < words_.size() &&
            words_[pos_ + 1].text == "missed") {
            pos_ += 2;
            Condition c;
            c.metric = "heartbeat missed";
            c.unit = MetricUnit::flag;
            c.op = Comparison::greater;
            c.threshold = 0;
            c.text = std::string(text_.substr(first.at, words_[pos_ - 1].at + 6 - first.at));
            return end_of_comparison(std::move(c));
        }
        std::vector<MetricInfo> candidates;
        std::optional<EngineName> engine;
        if (first.text.starts_with(kEnginePrefix)) {
            auto name = parse_engine_metric(first.text, scope_);
            if (!name) return name.error();
            candidates.push_back({std::string(first.text), MetricUnit::number,
                                  engine_journal_key(name->series, name->rate)});
            engine = std::move(*name);
        } else {
            candidates = metrics_named(scope_, first.text);
        }
        if (candidates.empty()) {
            if (auto spaced = glued_operator(first.text, scope_))
                return error_here("put spaces around the comparison: '" + *spaced + "', not '" +
                                  std::string(first.text) + "'");
            return unknown_metric(first.text, scope_);
        }
        ++pos_;
        if (pos_ == words_.size() || is_keyword(words_[pos_].text))
            return error_here(
                "incomplete condition: a comparison (>, >=, <, <=, ==, !=) must "
                "follow '" +
                std::string(first.text) + "'; " + std::string(kGrammar));
        auto op = parse_op(words_[pos_].text);
        if (!op)
            return error_here("expected a comparison (>, >=, <, <=, ==, !=) after '" +
                              std::string(first.text) + "', not '" +
                              std::string(words_[pos_].text) + "'");
        ++pos_;
        if (pos_ == words_.size() || is_keyword(words_[pos_].text))
            return error_here("incomplete condition: a value must follow '" +
                              std::string(first.text) + " " + std::string(to_string(*op)) + "'; " +
                              std::string(kGrammar));
        const Word& value = words_[pos_];
        Condition c;
        c.metric = std::string(first.text);
        c.op = *op;
        if (engine) {
            c.engine_series = std::move(engine->series);
            c.engine_rate = engine->rate;
        }
        bool matched = false;
        for (const auto& candidate : candidates) {
            if (auto threshold = parse_threshold(value.text, candidate.unit)) {
                c.unit = candidate.unit;
                c.threshold = *threshold;
                matched = true;
                break;
            }
        }
        if (!matched) return unit_mismatch(first.text, candidates, value.text);
        c.threshold_text = std::string(value.text);
        c.text = std::string(text_.substr(first.at, value.at + value.text.size() - first.at));
        ++pos_;
        return end_of_comparison(std::move(c));
    }

    // After a comparison: the end, `and`, `or` or `for`.
    Result<Condition> end_of_comparison(Condition c) {
        if (pos_ == words_.size() || is_keyword(words_[pos_].text)) return c;
        return error_here("unexpected '" + std::string(words_[pos_].text) + "' after '" + c.text +
                          "': expected 'and', 'or' or 'for'; " + std::string(kGrammar));
    }

    // "for DURATION", the last two words.
    Result<Duration> parse_hold() {
        if (!at("for"))  // a word after a complete expression that is not `for`
            return error_here("unexpected '" + std::string(words_[pos_].text) +
                              "': " + std::string(kGrammar));
        ++pos_;
        if (pos_ == words_.size())
            return error_here("'for' needs a duration (e.g. 'for 30s'): " + std::string(kGrammar));
        const Word& value = words_[pos_];
        auto d = parse_duration(value.text);
        if (!d) return error_here("after 'for': " + d.error().what);
        // A condition held longer than a day is no condition a policy acts on.
        if (*d > std::chrono::hours(24))
            return error_here("after 'for': at most 1d, not " + std::string(value.text));
        ++pos_;
        if (pos_ < words_.size())
            return error_here(
                "'for' binds to the whole condition and is written once, at its end; "
                "nothing may follow 'for " +
                std::string(value.text) + "', not '" + std::string(words_[pos_].text) + "'");
        return *d;
    }

    std::string_view text_;
    std::vector<Word> words_;
    RuleScope scope_;
    size_t pos_ = 0;
    size_t comparisons_ = 0;
};

bool compare(Comparison op, double value, double threshold) {
    switch (op) {
        case Comparison::greater:
            return value > threshold;
        case Comparison::greater_equal:
            return value >= threshold;
        case Comparison::less:
            return value < threshold;
        case Comparison::less_equal:
            return value <= threshold;
        case Comparison::equal:
            return value == threshold;
        case Comparison::not_equal:
            return value != threshold;
    }
    return false;
}

void collect(const Condition& c, std::vector<const Condition*>& out) {
    if (c.kind == Condition::Kind::compare) {
        out.push_back(&c);
        return;
    }
    for (const auto& operand : c.operands) collect(operand, out);
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
        case Comparison::equal:
            return "==";
        case Comparison::not_equal:
            return "!=";
    }
    return "?";
}

std::vector<const Condition*> comparisons(const Condition& condition) {
    std::vector<const Condition*> out;
    collect(condition, out);
    return out;
}

bool mentions_metric(const Condition& condition, std::string_view prefix) {
    for (const Condition* leaf : comparisons(condition))
        if (leaf->metric.starts_with(prefix)) return true;
    return false;
}

bool only_metrics(const Condition& condition, std::string_view prefix) {
    for (const Condition* leaf : comparisons(condition))
        if (!leaf->metric.starts_with(prefix)) return false;
    return true;
}

std::vector<std::string> engine_series_of(const Condition& condition) {
    std::vector<std::string> out;
    for (const Condition* leaf : comparisons(condition))
        if (!leaf->engine_series.empty() &&
            std::find(out.begin(), out.end(), leaf->engine_series) == out.end())
            out.push_back(leaf->engine_series);
    return out;
}

Result<Condition> parse_condition(std::string_view text, RuleScope scope) {
    return Parser(text, scope).parse();
}

bool condition_holds(const Condition& c, std::optional<double> value) {
    if (!value) return false;
    return compare(c.op, *value, c.threshold);
}

bool condition_holds(const Condition& c, const MeasureComparison& measure) {
    switch (c.kind) {
        case Condition::Kind::compare:
            return condition_holds(c, measure(c));
        case Condition::Kind::all_of:
            for (const auto& operand : c.operands)
                if (!condition_holds(operand, measure)) return false;
            return !c.operands.empty();
        case Condition::Kind::any_of:
            for (const auto& operand : c.operands)
                if (condition_holds(operand, measure)) return true;
            return false;
    }
    return false;
}

}  // namespace infervisor
