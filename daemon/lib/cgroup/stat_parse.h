// The one parser of the kernel's small text files: cgroupfs interface files
// (memory.current, memory.stat, memory.events, cpu.stat, pids.current, ...)
// and the procfs files that share their formats (/proc/vmstat). Pure
// functions over the text, for fixtures and fuzzing; read_counters() is the
// whole-file form. Numbers are parsed with std::from_chars only: no locale,
// no exceptions, no partial numbers.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace infervisor {

// A whole non-negative decimal number, surrounding blanks and the trailing
// newline ignored ("1234\n"); nullopt for anything else.
std::optional<uint64_t> parse_u64(std::string_view text);

// A single-value file: a number, or "max" (no limit), which reads as empty.
// Anything else is an error saying what was found.
Result<std::optional<uint64_t>> parse_single_value(std::string_view text);

// "key value" lines (vmstat, memory.stat, memory.events, cpu.stat). Lines
// whose value is not a non-negative integer are skipped, not errors: these
// files grow new keys with kernel versions.
using Counters = std::map<std::string, uint64_t, std::less<>>;
Counters parse_counters(std::string_view text);
Result<Counters> read_counters(const std::filesystem::path& path);

std::optional<uint64_t> find_counter(const Counters& counters, std::string_view key);

}  // namespace infervisor
