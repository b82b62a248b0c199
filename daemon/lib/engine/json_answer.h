// Reading an inference server's JSON answer: untrusted text (the worker
// serves it), already bounded in size by the HTTP exchange.
//
// Contract: parse_json_answer never throws and never recurses deeper than
// kMaxJsonDepth levels (the nesting is counted before nlohmann_json parses
// anything, so neither parsing nor destroying the value goes deep); the
// field readers return nullopt for a missing key or a value of another
// type, never convert one (a "5" is not a 5, a 5.5 is not an integer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace infervisor {

inline constexpr size_t kMaxJsonDepth = 32;

Result<nlohmann::json> parse_json_answer(std::string_view text);

std::optional<std::string> string_field(const nlohmann::json& object, const char* key);
std::optional<int64_t> int_field(const nlohmann::json& object, const char* key);
const nlohmann::json* object_field(const nlohmann::json& object, const char* key);

// A server's text for a message: at most 200 bytes, control characters and
// non-ASCII bytes as '?'.
std::string shown_text(std::string_view text);

}  // namespace infervisor
