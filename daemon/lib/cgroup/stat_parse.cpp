#include "cgroup/stat_parse.h"

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

}  // namespace

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
    std::optional<uint64_t> found;
    for_each_line(text_, [&](std::string_view line) {
        if (found || line.size() <= key.size() || line[key.size()] != ' ' || !line.starts_with(key))
            return;
        found = parse_u64(line.substr(key.size() + 1));
    });
    return found;
}

}  // namespace infervisor
