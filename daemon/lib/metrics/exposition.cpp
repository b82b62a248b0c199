#include "metrics/exposition.h"

#include <charconv>
#include <cmath>
#include <stdexcept>

namespace infervisor {

namespace {

bool name_char(char c, bool first, bool colon) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') return true;
    if (colon && c == ':') return true;
    return !first && c >= '0' && c <= '9';
}

bool valid_name(std::string_view name, bool colon) {
    if (name.empty()) return false;
    for (size_t i = 0; i < name.size(); ++i)
        if (!name_char(name[i], i == 0, colon)) return false;
    return true;
}

std::string_view type_name(MetricType type) {
    switch (type) {
        case MetricType::counter:
            return "counter";
        case MetricType::summary:
            return "summary";
        case MetricType::gauge:
            break;
    }
    return "gauge";
}

}  // namespace

bool valid_metric_name(std::string_view name) { return valid_name(name, true); }

bool valid_label_name(std::string_view name) {
    return valid_name(name, false) && !name.starts_with("__");
}

namespace {

// Appends `value` escaped; most values need no escaping and are appended whole.
void append_label_value(std::string& out, std::string_view value) {
    if (value.find_first_of("\\\"\n") == std::string_view::npos) {
        out += value;
        return;
    }
    for (char c : value) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '"')
            out += "\\\"";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
}

}  // namespace

std::string escape_label_value(std::string_view value) {
    std::string out;
    append_label_value(out, value);
    return out;
}

std::string escape_help(std::string_view help) {
    std::string out;
    for (char c : help) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

namespace {

// The value as format_sample_value() spells it, appended to `out` without an
// allocation of its own.
void append_sample_value(std::string& out, double value) {
    if (std::isnan(value)) {
        out += "NaN";
        return;
    }
    if (std::isinf(value)) {
        out += value > 0 ? "+Inf" : "-Inf";
        return;
    }
    char buf[32];
    std::to_chars_result r;
    if (value == std::floor(value) && std::fabs(value) <= 9007199254740992.0)
        r = std::to_chars(buf, buf + sizeof buf, static_cast<int64_t>(value));
    else
        r = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::general, 17);
    out.append(buf, r.ptr);
}

}  // namespace

std::string format_sample_value(double value) {
    std::string out;
    append_sample_value(out, value);
    return out;
}

void Exposition::family(std::string_view name, MetricType type, std::string_view help) {
    if (!valid_metric_name(name)) throw std::logic_error("bad metric name: " + std::string(name));
    if (type == MetricType::counter && !name.ends_with("_total"))
        throw std::logic_error("a counter's name ends in _total: " + std::string(name));
    if (type != MetricType::counter && name.ends_with("_total"))
        throw std::logic_error("only a counter's name ends in _total: " + std::string(name));
    if (type == MetricType::summary && (name.ends_with("_sum") || name.ends_with("_count")))
        throw std::logic_error("a summary's name is its series' without _sum/_count: " +
                               std::string(name));
    if (!families_.emplace(name).second)
        throw std::logic_error("metric family written twice: " + std::string(name));
    current_ = name;
    current_type_ = type;
    text_ += "# HELP ";
    text_ += name;
    text_ += ' ';
    text_ += escape_help(help);
    text_ += "\n# TYPE ";
    text_ += name;
    text_ += ' ';
    text_ += type_name(type);
    text_ += '\n';
}

void Exposition::sample(std::span<const Label> labels, double value) {
    if (current_type_ == MetricType::summary)
        throw std::logic_error("a summary's series are written with summary()");
    series({}, labels, value);
}

void Exposition::summary(std::span<const Label> labels, double sum, uint64_t count) {
    if (current_type_ != MetricType::summary)
        throw std::logic_error("summary() in a family that is not a summary: " + current_);
    series("_sum", labels, sum);
    series("_count", labels, static_cast<double>(count));
}

void Exposition::series(std::string_view suffix, std::span<const Label> labels, double value) {
    if (current_.empty()) throw std::logic_error("a sample before its family");
    text_ += current_;
    text_ += suffix;
    if (!labels.empty()) {
        text_ += '{';
        bool first = true;
        for (const auto& [name, label_value] : labels) {
            if (!valid_label_name(name))
                throw std::logic_error("bad label name: " + std::string(name));
            if (!first) text_ += ',';
            first = false;
            text_ += name;
            text_ += "=\"";
            append_label_value(text_, label_value);
            text_ += '"';
        }
        text_ += '}';
    }
    text_ += ' ';
    append_sample_value(text_, value);
    text_ += '\n';
}

}  // namespace infervisor
