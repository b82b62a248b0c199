#include "human_format.h"

#include <fmt/format.h>

#include <ctime>

#include "base/units.h"

namespace infervisor::cli {

std::string human_bytes(std::optional<uint64_t> bytes) { return bytes ? human_size(*bytes) : "-"; }

std::string human_limit(std::optional<uint64_t> bytes) {
    return bytes ? human_bytes(bytes) : "max";
}

std::string human_uptime(std::optional<uint64_t> usec) {
    if (!usec) return "-";
    uint64_t s = *usec / 1000000;
    const uint64_t d = s / 86400, h = s % 86400 / 3600, m = s % 3600 / 60, sec = s % 60;
    if (d) return fmt::format("{}d{}h", d, h);
    if (h) return fmt::format("{}h{}m", h, m);
    if (m) return fmt::format("{}m{}s", m, sec);
    return fmt::format("{}s", sec);
}

std::string human_percent(std::optional<double> value) {
    return value ? fmt::format("{:.2f}", *value) : "-";
}

std::string local_time(uint64_t usec) {
    std::time_t seconds = static_cast<std::time_t>(usec / 1000000);
    std::tm tm{};
    ::localtime_r(&seconds, &tm);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &tm);
    return text;
}

const char* state_colour(const std::string& state) {
    if (state == "ready" || state == "running") return "\x1b[32m";
    if (state == "starting" || state == "stopping" || state == "backoff" || state == "suspended")
        return "\x1b[33m";
    if (state == "failed") return "\x1b[1;31m";
    return "\x1b[2m";
}

std::string printable(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    auto escape = [&](unsigned char c) {
        static const char kHex[] = "0123456789abcdef";
        out += "\\x";
        out += kHex[c >> 4];
        out += kHex[c & 15];
    };
    for (size_t i = 0; i < text.size(); ++i) {
        auto c = static_cast<unsigned char>(text[i]);
        if (c < 0x20 || c == 0x7f) {
            escape(c);
        } else if (c == 0xc2 && i + 1 < text.size() &&
                   static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
                   static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
            escape(c);  // U+0080..U+009F: C1 controls (CSI, OSC, ...)
            escape(static_cast<unsigned char>(text[++i]));
        } else {
            out += static_cast<char>(c);
        }
    }
    return out;
}

}  // namespace infervisor::cli
