#include "base/units.h"

#include <cctype>
#include <charconv>
#include <cstdio>
#include <limits>

namespace infervisor {

namespace {

// Reads leading decimal digits; returns false when there are none or the
// number overflows.
bool take_number(std::string_view& s, uint64_t& out) {
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    if (ec != std::errc() || ptr == s.data()) return false;
    s.remove_prefix(static_cast<size_t>(ptr - s.data()));
    return true;
}

std::optional<uint64_t> size_multiplier(std::string_view unit) {
    std::string u;
    for (char c : unit) u += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (u.empty() || u == "B") return 1;
    if (u == "K" || u == "KB" || u == "KIB") return 1ULL << 10;
    if (u == "M" || u == "MB" || u == "MIB") return 1ULL << 20;
    if (u == "G" || u == "GB" || u == "GIB") return 1ULL << 30;
    if (u == "T" || u == "TB" || u == "TIB") return 1ULL << 40;
    return std::nullopt;
}

}  // namespace

Result<ByteLimit> parse_size(std::string_view text) {
    const std::string quoted = "'" + std::string(text) + "'";
    if (text == "max" || text == "infinity") return ByteLimit{};
    std::string_view rest = text;
    uint64_t number = 0;
    if (!take_number(rest, number))
        return plain_error("invalid size " + quoted +
                           ": expected a number with an optional unit "
                           "K, M, G or T (e.g. 512M), or 'max'");
    auto mult = size_multiplier(rest);
    if (!mult)
        return plain_error("invalid size " + quoted + ": unknown unit '" + std::string(rest) +
                           "' (use K, M, G or T)");
    if (number > std::numeric_limits<uint64_t>::max() / *mult)
        return plain_error("invalid size " + quoted + ": too large");
    return ByteLimit{number * *mult};
}

std::string format_size(ByteLimit bytes) {
    if (!bytes) return "max";
    static constexpr std::pair<uint64_t, const char*> kUnits[] = {
        {1ULL << 40, "T"}, {1ULL << 30, "G"}, {1ULL << 20, "M"}, {1ULL << 10, "K"}};
    uint64_t b = *bytes;
    if (b != 0) {
        for (auto [size, name] : kUnits)
            if (b % size == 0) return std::to_string(b / size) + name;
    }
    return std::to_string(b);
}

Result<Duration> parse_duration(std::string_view text) {
    const std::string quoted = "'" + std::string(text) + "'";
    const std::string expected =
        ": expected groups of <number><unit> with unit ms, s, m, h or d (e.g. 30s, 1m30s)";
    if (text.empty()) return plain_error("invalid duration ''" + expected);
    std::string_view rest = text;
    uint64_t total_ms = 0;
    while (!rest.empty()) {
        uint64_t number = 0;
        if (!take_number(rest, number)) return plain_error("invalid duration " + quoted + expected);
        size_t unit_len = 0;
        while (unit_len < rest.size() && std::isalpha(static_cast<unsigned char>(rest[unit_len])))
            ++unit_len;
        std::string_view unit = rest.substr(0, unit_len);
        rest.remove_prefix(unit_len);
        uint64_t mult = 0;
        if (unit == "ms")
            mult = 1;
        else if (unit == "s" || unit == "sec")
            mult = 1000;
        else if (unit == "m" || unit == "min")
            mult = 60'000;
        else if (unit == "h")
            mult = 3'600'000;
        else if (unit == "d")
            mult = 86'400'000;
        else if (unit.empty())
            return plain_error("invalid duration " + quoted + ": missing unit" + expected);
        else
            return plain_error("invalid duration " + quoted + ": unknown unit '" +
                               std::string(unit) + "'" + expected);
        // Capped at 100 years: steady_clock counts nanoseconds in 64 bits,
        // and anything longer is a typo, not a timeout.
        constexpr uint64_t kMaxMs = 100ULL * 365 * 86'400'000;
        if (number > kMaxMs / mult || total_ms + number * mult > kMaxMs)
            return plain_error("invalid duration " + quoted + ": too large (at most 100 years)");
        total_ms += number * mult;
    }
    return Duration(static_cast<int64_t>(total_ms));
}

std::string format_duration(Duration d) {
    int64_t ms = d.count();
    if (ms == 0) return "0s";
    std::string out;
    if (ms < 0) {
        out = "-";
        ms = -ms;
    }
    static constexpr std::pair<int64_t, const char*> kUnits[] = {
        {86'400'000, "d"}, {3'600'000, "h"}, {60'000, "m"}, {1000, "s"}, {1, "ms"}};
    for (auto [size, name] : kUnits) {
        if (ms >= size) {
            out += std::to_string(ms / size) + name;
            ms %= size;
        }
    }
    return out;
}

std::string human_size(uint64_t bytes) {
    static constexpr const char* kUnits[] = {"B", "K", "M", "G", "T", "P"};
    if (bytes < 1024) return std::to_string(bytes) + "B";
    double value = static_cast<double>(bytes);
    int unit = 0;
    while (value >= 1024 && unit < 5) {
        value /= 1024;
        ++unit;
    }
    char text[32];
    if (value == static_cast<double>(static_cast<uint64_t>(value)))  // "8G", not "8.0G"
        std::snprintf(text, sizeof text, "%.0f%s", value, kUnits[unit]);
    else
        std::snprintf(text, sizeof text, "%.1f%s", value, kUnits[unit]);
    return text;
}

}  // namespace infervisor
