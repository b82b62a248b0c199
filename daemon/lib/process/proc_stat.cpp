#include "process/proc_stat.h"

#include <charconv>

#include "base/file_io.h"

namespace infervisor {

Result<ProcStat> parse_proc_stat(std::string_view line) {
    size_t paren = line.rfind(')');
    if (paren == std::string_view::npos) return plain_error("no command name in /proc stat line");
    // After ") ": field 3 (state) is the first, then 4 (ppid); starttime is field 22.
    std::string_view rest = line.substr(paren + 1);
    ProcStat stat;
    int field = 2;
    size_t pos = 0;
    while (pos < rest.size()) {
        while (pos < rest.size() && (rest[pos] == ' ' || rest[pos] == '\n')) ++pos;
        size_t end = rest.find_first_of(" \n", pos);
        if (end == std::string_view::npos) end = rest.size();
        if (pos == end) break;
        ++field;
        if (field == 3) stat.state = rest[pos];
        if (field == 4) {
            auto [ptr, ec] = std::from_chars(rest.data() + pos, rest.data() + end, stat.ppid);
            if (ec != std::errc() || ptr != rest.data() + end)
                return plain_error("malformed ppid in /proc stat line");
        }
        if (field == 22) {
            auto [ptr, ec] = std::from_chars(rest.data() + pos, rest.data() + end, stat.start_time);
            if (ec != std::errc() || ptr != rest.data() + end)
                return plain_error("malformed starttime in /proc stat line");
            return stat;
        }
        pos = end;
    }
    return plain_error("/proc stat line has fewer than 22 fields");
}

Result<ProcStat> read_proc_stat(const std::filesystem::path& procfs, pid_t pid) {
    auto text = read_file(procfs / std::to_string(pid) / "stat");
    if (!text) return text.error();
    return parse_proc_stat(*text);
}

Result<uint64_t> process_start_time(const std::filesystem::path& procfs, pid_t pid) {
    auto stat = read_proc_stat(procfs, pid);
    if (!stat) return stat.error();
    return stat->start_time;
}

}  // namespace infervisor
