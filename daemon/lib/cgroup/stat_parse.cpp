#include "cgroup/stat_parse.h"

#include <charconv>

#include "base/file_io.h"

namespace infervisor {

std::optional<uint64_t> parse_u64(std::string_view text) {
    text = trim(text);
    uint64_t value = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
    return value;
}

Result<std::optional<uint64_t>> parse_single_value(std::string_view text) {
    std::string_view value = trim(text);
    if (value == "max") return std::optional<uint64_t>();
    if (auto number = parse_u64(value)) return std::optional<uint64_t>(*number);
    return plain_error("expected a number or 'max', found '" + std::string(value) + "'");
}

std::optional<uint64_t> Counters::find(std::string_view key) const {
    if (key.empty() || key.find(' ') != std::string_view::npos) return std::nullopt;
    // Line by line, stopping at the first match with a number.
    for (std::string_view rest = text_; !rest.empty();) {
        size_t eol = rest.find('\n');
        std::string_view line = rest.substr(0, eol);
        if (line.size() > key.size() && line[key.size()] == ' ' && line.starts_with(key))
            if (auto value = parse_u64(line.substr(key.size() + 1))) return value;
        if (eol == std::string_view::npos) break;
        rest.remove_prefix(eol + 1);
    }
    return std::nullopt;
}

}  // namespace infervisor
