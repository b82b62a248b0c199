// Parsing and printing of the sizes and durations people write in config files
// and on the command line: "512M", "2G", "max", "30s", "1m30s", "250ms".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/result.h"

namespace infervisor {

// A byte count as cgroupfs understands it; nullopt means "max" (no limit).
using ByteLimit = std::optional<uint64_t>;

// Sizes: a non-negative integer with an optional binary suffix K, M, G, T
// (also KiB/MiB/GiB/TiB, KB/MB/GB/TB are taken as binary too), or "max" for
// no limit. Overflow and junk are errors; the error names what was expected.
Result<ByteLimit> parse_size(std::string_view text);

// "512M"-style rendering with the largest exact binary unit; "max" for nullopt.
std::string format_size(ByteLimit bytes);

// For people, not for config files: the largest binary unit, one decimal
// unless exact ("21.9G", "512M", "7B").
std::string human_size(uint64_t bytes);

// Durations: one or more <number><unit> groups with units ms, s, m (min), h, d,
// e.g. "30s", "1m30s", "1h", "250ms". A bare number is rejected: the unit is
// part of the meaning.
Result<Duration> parse_duration(std::string_view text);

// "1m30s"-style rendering; "0s" for zero.
std::string format_duration(Duration d);

// Whole milliseconds, as a journal field's value (RUNTIME_MS=1500).
inline std::string milliseconds_text(Duration d) { return std::to_string(d.count()); }

}  // namespace infervisor
