// Base64 (RFC 4648, with padding): binary in a JSON string, such as the
// trace blocks the Trace call returns.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace infervisor {

std::string base64_encode(std::string_view bytes);
// Empty for text that is not canonical padded base64 of the standard
// alphabet (what base64_encode writes).
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace infervisor
