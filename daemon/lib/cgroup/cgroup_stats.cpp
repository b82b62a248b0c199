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

Result<std::string_view> CgroupStats::text(const char* file) const {
    if (held_) return held_->read(file);
    auto text = read_file(dir_.path() / file);
    if (!text) return text.error();
    buffer_ = std::move(text).value();
    return std::string_view(buffer_);
}

CgroupValue CgroupStats::single_value(const char* file) const {
    auto text = this->text(file);
    if (!text) return text.error();
    auto value = parse_single_value(*text);
    if (!value) return plain_error((path() / file).string() + ": " + value.error().what);
    return value;
}

Result<PsiReading> CgroupStats::pressure(const char* file) const {
    auto text = this->text(file);
    if (!text) return text.error();
    auto reading = parse_psi(*text);
    if (!reading) return plain_error((path() / file).string() + ": " + reading.error().what);
    return reading;
}

Result<Counters> CgroupStats::counters(const char* file) const {
    auto text = this->text(file);
    if (!text) return text.error();
    return parse_counters(*text);
}

}  // namespace infervisor
