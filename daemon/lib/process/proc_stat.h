// The start time of a process, from /proc/PID/stat: with the pid it names
// one process for the life of the boot, which a pid alone does not (pids are
// recycled). A daemon that finds a pid in its state file checks it against
// the start time it recorded before it takes the process for its worker.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string_view>

#include "base/result.h"

namespace infervisor {

struct ProcStat {
    char state = '?';         // field 3: R, S, D, Z, ...
    pid_t ppid = 0;           // field 4
    uint64_t start_time = 0;  // field 22: starttime, clock ticks after boot
};

// Fields 3, 4 and 22 of a /proc/PID/stat line. The command name (field 2) may
// hold spaces and parentheses, so fields are counted from its last ')'.
Result<ProcStat> parse_proc_stat(std::string_view stat_line);

// parse_proc_stat of <procfs>/PID/stat; ENOENT when there is no such process.
Result<ProcStat> read_proc_stat(const std::filesystem::path& procfs, pid_t pid);
// Its start time alone.
Result<uint64_t> process_start_time(const std::filesystem::path& procfs, pid_t pid);

}  // namespace infervisor
