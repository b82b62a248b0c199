// Parsers for the procfs files the policy reads beyond the cgroup's own
// (cgroup/cgroup_stats.h): /proc/meminfo. /proc/vmstat shares the cgroup
// counter files' format (cgroup/stat_parse.h). Each parser takes the text;
// read_meminfo() is the one reader of /proc/meminfo (the sampler, admission,
// the restart room and the caps check all ask it).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>

#include "base/result.h"

namespace infervisor {

struct MemInfo {
    std::optional<uint64_t> mem_total;      // bytes
    std::optional<uint64_t> mem_available;  // bytes
    std::optional<uint64_t> swap_total;     // bytes
    std::optional<uint64_t> swap_free;      // bytes
};

// /proc/meminfo: "MemTotal:       24683652 kB" lines, converted to bytes.
MemInfo parse_meminfo(std::string_view text);

// {procfs}/meminfo, read and parsed.
Result<MemInfo> read_meminfo(const std::filesystem::path& procfs);

}  // namespace infervisor
