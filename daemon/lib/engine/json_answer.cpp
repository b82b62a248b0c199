#include "engine/json_answer.h"

#include <limits>

namespace infervisor {

using nlohmann::json;

namespace {

// The deepest nesting of arrays and objects in `text`, outside strings;
// stops counting past `limit`.
size_t nesting_depth(std::string_view text, size_t limit) {
    size_t depth = 0, deepest = 0;
    bool in_string = false, escaped = false;
    for (char c : text) {
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = false;
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            deepest = std::max(deepest, ++depth);
            if (deepest > limit) return deepest;
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
    return deepest;
}

}  // namespace

Result<json> parse_json_answer(std::string_view text) {
    if (nesting_depth(text, kMaxJsonDepth) > kMaxJsonDepth)
        return plain_error("the answer nests deeper than " + std::to_string(kMaxJsonDepth) +
                           " levels");
    json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return plain_error("the answer is not JSON");
    return j;
}

std::optional<std::string> string_field(const json& object, const char* key) {
    if (!object.is_object()) return std::nullopt;
    auto it = object.find(key);
    if (it == object.end() || !it->is_string()) return std::nullopt;
    return it->get<std::string>();
}

std::optional<int64_t> int_field(const json& object, const char* key) {
    if (!object.is_object()) return std::nullopt;
    auto it = object.find(key);
    if (it == object.end()) return std::nullopt;
    if (it->is_number_unsigned()) {
        uint64_t v = it->get<uint64_t>();
        if (v > uint64_t(std::numeric_limits<int64_t>::max())) return std::nullopt;
        return int64_t(v);
    }
    if (it->is_number_integer()) return it->get<int64_t>();
    return std::nullopt;
}

const json* object_field(const json& object, const char* key) {
    if (!object.is_object()) return nullptr;
    auto it = object.find(key);
    if (it == object.end() || !it->is_object()) return nullptr;
    return &*it;
}

std::string shown_text(std::string_view text) {
    std::string out;
    for (char c : text.substr(0, 200))
        out += (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) ? '?'
                                                                                               : c;
    if (text.size() > 200) out += "...";
    return out;
}

}  // namespace infervisor
