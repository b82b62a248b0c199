#include "policy/stat_files.h"

#include <charconv>

#include "base/file_io.h"

namespace infervisor {

namespace {

// Calls `line_fn` with each line of `text`, newline removed.
template <class Fn>
void for_each_line(std::string_view text, Fn line_fn) {
    while (!text.empty()) {
        size_t eol = text.find('\n');
        line_fn(text.substr(0, eol));
        if (eol == std::string_view::npos) break;
        text.remove_prefix(eol + 1);
    }
}

std::optional<uint64_t> parse_u64(std::string_view text) {
    uint64_t value = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
    return value;
}

}  // namespace

Counters parse_counters(std::string_view text) {
    Counters out;
    for_each_line(text, [&](std::string_view line) {
        size_t space = line.find(' ');
        if (space == std::string_view::npos || space == 0) return;
        auto value = parse_u64(trim(line.substr(space + 1)));
        if (value) out.emplace(std::string(line.substr(0, space)), *value);
    });
    return out;
}

Result<Counters> read_counters(const std::filesystem::path& path) {
    auto text = read_file(path);
    if (!text) return text.error();
    return parse_counters(*text);
}

std::optional<uint64_t> find_counter(const Counters& counters, std::string_view key) {
    auto it = counters.find(key);
    if (it == counters.end()) return std::nullopt;
    return it->second;
}

MemInfo parse_meminfo(std::string_view text) {
    MemInfo out;
    for_each_line(text, [&](std::string_view line) {
        size_t colon = line.find(':');
        if (colon == std::string_view::npos) return;
        std::string_view key = line.substr(0, colon);
        std::optional<uint64_t>* target = key == "MemTotal"       ? &out.mem_total
                                          : key == "MemAvailable" ? &out.mem_available
                                          : key == "SwapTotal"    ? &out.swap_total
                                                                  : nullptr;
        if (!target) return;
        std::string_view value = trim(line.substr(colon + 1));
        uint64_t scale = 1;
        if (value.size() > 3 && value.substr(value.size() - 3) == " kB") {
            value.remove_suffix(3);
            scale = 1024;
        }
        if (auto number = parse_u64(value)) *target = *number * scale;
    });
    return out;
}

MemoryEvents memory_events_from(const Counters& counters) {
    auto get = [&](std::string_view key) { return find_counter(counters, key).value_or(0); };
    return MemoryEvents{get("low"), get("high"),     get("max"),
                        get("oom"), get("oom_kill"), get("oom_group_kill")};
}

}  // namespace infervisor
