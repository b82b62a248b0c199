#include "cgroup/cgroup_stats.h"

#include "base/file_io.h"

namespace infervisor {

MemoryEvents memory_events_from(const Counters& counters) {
    auto get = [&](std::string_view key) { return find_counter(counters, key).value_or(0); };
    return MemoryEvents{get("low"), get("high"),     get("max"),
                        get("oom"), get("oom_kill"), get("oom_group_kill")};
}

std::optional<uint64_t> value_or_empty(const CgroupValue& value) {
    return value ? *value : std::nullopt;
}

Result<MemoryEvents> CgroupStats::memory_events() const {
    auto events = counters(kMemoryEventsFile);
    if (!events) return events.error();
    return memory_events_from(*events);
}

CgroupValue CgroupStats::single_value(const char* file) const {
    auto path = dir_.path() / file;
    auto text = read_file(path);
    if (!text) return text.error();
    auto value = parse_single_value(*text);
    if (!value) return plain_error(path.string() + ": " + value.error().what);
    return value;
}

Result<PsiReading> CgroupStats::pressure(const char* file) const {
    return read_psi(dir_.path() / file);
}

Result<Counters> CgroupStats::counters(const char* file) const {
    return read_counters(dir_.path() / file);
}

}  // namespace infervisor
