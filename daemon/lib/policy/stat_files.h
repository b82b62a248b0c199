// Parsers for the counter files the policy reads: /proc/vmstat, /proc/meminfo,
// and a cgroup's memory.stat, memory.events and cpu.stat. Each parser takes
// the text (for fixtures); the read_* forms take the path.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "policy/samples.h"

namespace infervisor {

// "key value" lines (vmstat, memory.stat, memory.events, cpu.stat). Lines
// whose value is not a non-negative integer are skipped, not errors: these
// files grow new keys with kernel versions.
using Counters = std::map<std::string, uint64_t, std::less<>>;
Counters parse_counters(std::string_view text);
Result<Counters> read_counters(const std::filesystem::path& path);

std::optional<uint64_t> find_counter(const Counters& counters, std::string_view key);

struct MemInfo {
    std::optional<uint64_t> mem_total;      // bytes
    std::optional<uint64_t> mem_available;  // bytes
    std::optional<uint64_t> swap_total;     // bytes
};

// /proc/meminfo: "MemTotal:       24683652 kB" lines, converted to bytes.
MemInfo parse_meminfo(std::string_view text);

// memory.events; keys the kernel does not print stay 0.
MemoryEvents memory_events_from(const Counters& counters);

}  // namespace infervisor
