// Signal names as people write them: "SIGTERM", "TERM", "term" or "15".
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace infervisor {

std::optional<int> parse_signal(std::string_view text);
// "SIGTERM"; "SIG<number>" for signals without a name.
std::string signal_name(int sig);

}  // namespace infervisor
