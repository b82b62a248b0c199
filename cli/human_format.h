// How infervisorctl shows numbers to people: "1.5G", "3h12m", "-" for
// unknown, "max" for no limit, local wall-clock times.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace infervisor::cli {

// Bytes in the largest binary unit, one decimal unless exact: "1.5G", "512M",
// "7B"; "-" if unknown.
std::string human_bytes(std::optional<uint64_t> bytes);
// A limit: like human_bytes, but unknown/unset means "max".
std::string human_limit(std::optional<uint64_t> bytes);
// The two largest units: "2d3h", "3h12m", "4m5s", "9s"; "-" if unknown.
std::string human_uptime(std::optional<uint64_t> usec);
// "0.25"; "-" if unknown.
std::string human_percent(std::optional<double> value);
// "2026-11-30 03:06:04" in local time, from CLOCK_REALTIME microseconds.
std::string local_time(uint64_t usec);

// Text from workers (STATUS=, file names, their output) made safe for a
// terminal: control characters (C0, DEL, and C1 as UTF-8) become \xNN, so a
// worker cannot send escape sequences to the operator's terminal or forge
// lines. Everything else, UTF-8 included, is kept.
std::string printable(std::string_view text);

// SGR colour of a worker state, for terminals: ready/running green,
// starting/stopping/backoff yellow, failed red, stopped/parked dim.
const char* state_colour(const std::string& state);
inline constexpr const char* kColourReset = "\x1b[0m";

}  // namespace infervisor::cli
