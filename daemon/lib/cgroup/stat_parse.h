// The one parser of the kernel's small text files: cgroupfs interface files
// (memory.current, memory.stat, memory.events, cpu.stat, pids.current, ...)
// and the procfs files that share their formats (/proc/vmstat). Pure
// functions over the text, for fixtures and fuzzing. Numbers are parsed
// with std::from_chars only: no locale, no exceptions, no partial numbers.
#pragma once

#include <cstdint>
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

// "key value" lines (vmstat, memory.stat, memory.events, cpu.stat), looked
// up in the text as it was read: a view, valid as long as the text is,
// copying and allocating nothing (the sampler looks up a few keys of four
// such files per worker at every tick; building a map of memory.stat's
// fifty lines each time was a fifth of the idle daemon's CPU, issue 28).
// The first line whose key is `key` and whose value is a non-negative
// integer counts; other lines are skipped, not errors: these files grow new
// keys with kernel versions.
class Counters {
  public:
    explicit Counters(std::string_view text) : text_(text) {}
    std::optional<uint64_t> find(std::string_view key) const;

  private:
    std::string_view text_;
};

inline Counters parse_counters(std::string_view text) { return Counters(text); }

inline std::optional<uint64_t> find_counter(const Counters& counters, std::string_view key) {
    return counters.find(key);
}

}  // namespace infervisor
