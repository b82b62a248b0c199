// When an operator means by "--since WHEN" (events), as journalctl reads
// it: a duration back from now ("10m", "-1h", "2h ago"), "now", "today",
// "yesterday", a local date and time ("2026-12-02 14:30", "2026-12-02",
// "14:30:05" for today) or "@SECONDS" since the epoch.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/result.h"

namespace infervisor::cli {

// CLOCK_REALTIME microseconds; `now_usec` is the present. An error says what
// is expected.
Result<uint64_t> parse_since(std::string_view text, uint64_t now_usec);

}  // namespace infervisor::cli
