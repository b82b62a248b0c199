#include "base/base64.h"

#include <array>
#include <cstdint>

namespace infervisor {

namespace {

constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<int8_t, 256> decoding_table() {
    std::array<int8_t, 256> table{};
    for (auto& v : table) v = -1;
    for (size_t i = 0; i < kAlphabet.size(); ++i)
        table[static_cast<uint8_t>(kAlphabet[i])] = static_cast<int8_t>(i);
    return table;
}

constexpr auto kDecoding = decoding_table();

}  // namespace

std::string base64_encode(std::string_view bytes) {
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    size_t i = 0;
    for (; i + 3 <= bytes.size(); i += 3) {
        uint32_t v = static_cast<uint8_t>(bytes[i]) << 16 |
                     static_cast<uint8_t>(bytes[i + 1]) << 8 | static_cast<uint8_t>(bytes[i + 2]);
        for (int shift = 18; shift >= 0; shift -= 6) out.push_back(kAlphabet[v >> shift & 63]);
    }
    size_t rest = bytes.size() - i;
    if (rest == 0) return out;
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    if (rest == 2) v |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    out.push_back(kAlphabet[v >> 18 & 63]);
    out.push_back(kAlphabet[v >> 12 & 63]);
    out.push_back(rest == 2 ? kAlphabet[v >> 6 & 63] : '=');
    out.push_back('=');
    return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
    if (text.size() % 4 != 0) return std::nullopt;
    std::string out;
    out.reserve(text.size() / 4 * 3);
    for (size_t i = 0; i < text.size(); i += 4) {
        bool last = i + 4 == text.size();
        size_t padding = 0;
        if (last && text[i + 3] == '=') padding = text[i + 2] == '=' ? 2 : 1;
        uint32_t v = 0;
        for (size_t k = 0; k < 4; ++k) {
            int8_t d = k >= 4 - padding ? 0 : kDecoding[static_cast<uint8_t>(text[i + k])];
            if (d < 0) return std::nullopt;
            v = v << 6 | static_cast<uint32_t>(d);
        }
        // Canonical only: the bits padding drops must be zero.
        if ((padding == 2 && (v & 0xffff)) || (padding == 1 && (v & 0xff))) return std::nullopt;
        out.push_back(static_cast<char>(v >> 16 & 0xff));
        if (padding < 2) out.push_back(static_cast<char>(v >> 8 & 0xff));
        if (padding < 1) out.push_back(static_cast<char>(v & 0xff));
    }
    return out;
}

}  // namespace infervisor
