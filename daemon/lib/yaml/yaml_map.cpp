#include "yaml/yaml_map.h"

#include <algorithm>
#include <charconv>

#include "base/closest_match.h"

namespace infervisor {

namespace {

const char* type_name(const YAML::Node& n) {
    switch (n.Type()) {
        case YAML::NodeType::Map:
            return "a mapping";
        case YAML::NodeType::Sequence:
            return "a list";
        case YAML::NodeType::Scalar:
            return "a scalar";
        case YAML::NodeType::Null:
            return "empty";
        default:
            return "undefined";
    }
}

}  // namespace

bool check_item_count(const YAML::Node& node, std::size_t max, ConfigErrors& errors,
                      const std::string& what) {
    if (!node.IsSequence() && !node.IsMap()) return true;
    std::size_t n = node.size();
    if (n <= max) return true;
    errors.add(node.Mark(), what + " has " + std::to_string(n) + " items; at most " +
                                std::to_string(max) + " are allowed");
    return false;
}

YamlMap::YamlMap(const YAML::Node& node, ConfigErrors& errors, std::string what)
    : node_(node), errors_(errors), what_(std::move(what)) {
    if (node.IsNull()) {
        valid_ = true;  // an empty section is an empty mapping
        return;
    }
    if (!node.IsMap()) {
        errors_.add(node.Mark(), what_ + " must be a mapping, not " + type_name(node));
        return;
    }
    valid_ = true;
    for (const auto& kv : node) {
        if (!kv.first.IsScalar()) {
            errors_.add(kv.first.Mark(), "keys in " + what_ + " must be plain names");
            continue;
        }
        std::string key = kv.first.Scalar();
        if (entries_.count(key)) {
            errors_.add(kv.first.Mark(), "duplicate key '" + key + "' in " + what_);
            continue;
        }
        entries_.emplace(key, kv.second);
        key_marks_.emplace(key, kv.first.Mark());
    }
}

std::optional<YAML::Node> YamlMap::take(const std::string& key, Required required) {
    claimed_.insert(key);
    auto it = entries_.find(key);
    if (it == entries_.end()) {
        if (required == Required::yes && valid_)
            errors_.add(node_.Mark(), what_ + " is missing required key '" + key + "'");
        return std::nullopt;
    }
    return it->second;
}

std::optional<std::string> YamlMap::scalar(const YAML::Node& node, ConfigErrors& errors,
                                           const std::string& what) {
    if (!node.IsScalar()) {
        errors.add(node.Mark(), what + " must be a scalar, not " + type_name(node));
        return std::nullopt;
    }
    return node.Scalar();
}

bool YamlMap::get_string(const std::string& key, std::string& out, Required r) {
    auto n = take(key, r);
    if (!n) return false;
    auto s = scalar(*n, errors_, "'" + key + "' in " + what_);
    if (!s) return false;
    out = *s;
    return true;
}

bool YamlMap::get_bool(const std::string& key, bool& out, Required r) {
    auto n = take(key, r);
    if (!n) return false;
    auto s = scalar(*n, errors_, "'" + key + "' in " + what_);
    if (!s) return false;
    if (*s == "true" || *s == "yes" || *s == "on")
        out = true;
    else if (*s == "false" || *s == "no" || *s == "off")
        out = false;
    else {
        errors_.add(n->Mark(), "'" + key + "' must be true or false, not '" + *s + "'");
        return false;
    }
    return true;
}

bool YamlMap::get_int(const std::string& key, int64_t& out, int64_t min, int64_t max, Required r) {
    auto n = take(key, r);
    if (!n) return false;
    auto s = scalar(*n, errors_, "'" + key + "' in " + what_);
    if (!s) return false;
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(s->data(), s->data() + s->size(), v);
    if (ec != std::errc() || ptr != s->data() + s->size()) {
        errors_.add(n->Mark(), "'" + key + "' must be a whole number, not '" + *s + "'");
        return false;
    }
    if (v < min || v > max) {
        errors_.add(n->Mark(), "'" + key + "' must be between " + std::to_string(min) + " and " +
                                   std::to_string(max) + ", not " + *s);
        return false;
    }
    out = v;
    return true;
}

bool YamlMap::get_size(const std::string& key, ByteLimit& out, Required r) {
    auto n = take(key, r);
    if (!n) return false;
    auto s = scalar(*n, errors_, "'" + key + "' in " + what_);
    if (!s) return false;
    auto v = parse_size(*s);
    if (!v) {
        errors_.add(n->Mark(), "'" + key + "': " + v.error().what);
        return false;
    }
    if (*v && **v > kMaxConfigSize) {
        errors_.add(n->Mark(), "'" + key + "': " + *s +
                                   " is above the largest size accepted (2^60 bytes, 1048576T); "
                                   "write 'max' for no limit");
        return false;
    }
    out = *v;
    return true;
}

bool YamlMap::get_duration(const std::string& key, Duration& out, Required r, Duration max) {
    auto n = take(key, r);
    if (!n) return false;
    auto s = scalar(*n, errors_, "'" + key + "' in " + what_);
    if (!s) return false;
    auto v = parse_duration(*s);
    if (!v) {
        errors_.add(n->Mark(), "'" + key + "': " + v.error().what);
        return false;
    }
    if (*v > max) {
        errors_.add(n->Mark(), "'" + key + "' in " + what_ + " must be at most " +
                                   format_duration(max) + ", not " + *s);
        return false;
    }
    out = *v;
    return true;
}

bool YamlMap::get_string_list(const std::string& key, std::vector<std::string>& out, Required r,
                              std::size_t max_items) {
    auto n = take(key, r);
    if (!n) return false;
    if (!n->IsSequence()) {
        errors_.add(n->Mark(),
                    "'" + key + "' in " + what_ + " must be a list, not " + type_name(*n));
        return false;
    }
    if (!check_item_count(*n, max_items, errors_, "'" + key + "' in " + what_)) return false;
    std::vector<std::string> items;
    bool ok = true;
    for (const auto& item : *n) {
        auto s = scalar(item, errors_, "each item of '" + key + "'");
        if (s)
            items.push_back(*s);
        else
            ok = false;
    }
    if (ok) out = std::move(items);
    return ok;
}

bool YamlMap::get_string_map(const std::string& key, std::map<std::string, std::string>& out,
                             Required r, std::size_t max_items) {
    auto n = take(key, r);
    if (!n) return false;
    if (!check_item_count(*n, max_items, errors_, "'" + key + "' in " + what_)) return false;
    YamlMap inner(*n, errors_, "'" + key + "'");
    if (!inner.valid()) return false;
    std::map<std::string, std::string> result;
    bool ok = true;
    for (auto& [k, v] : inner.entries_) {
        inner.claimed_.insert(k);
        auto s = scalar(v, errors_, "'" + k + "' in '" + key + "'");
        if (s)
            result[k] = *s;
        else
            ok = false;
    }
    if (ok) out = std::move(result);
    return ok;
}

void YamlMap::finish() {
    std::vector<std::string> known;  // the hints' candidates, once there is an unknown key
    for (const auto& [key, value] : entries_) {
        (void)value;
        if (claimed_.count(key)) continue;
        if (known.empty()) known.assign(claimed_.begin(), claimed_.end());
        std::string hint;
        if (auto near = closest_match(key, known)) hint = " (did you mean '" + *near + "'?)";
        errors_.add(key_marks_.at(key), "unknown key '" + key + "' in " + what_ + hint);
    }
}

}  // namespace infervisor
