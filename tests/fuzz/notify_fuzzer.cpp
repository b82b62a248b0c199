// libFuzzer target: sd_notify datagrams, which any process of a worker may
// send (untrusted input, see notify_message.h).
//
// Whatever the bytes, parse_notify_message must not crash, and:
//  - an accepted message honours the contract: at most kMaxNotifyMessage
//    bytes, no NUL, keys of [A-Z0-9_]{1,64}, values without control
//    characters, at least one field, each field a line of the datagram;
//  - re-encoding the fields parses back to the same fields;
//  - an error's text has no control characters (it goes into the journal).
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "notify/notify_message.h"

using namespace infervisor;

namespace {

bool printable(std::string_view text) {
    for (char c : text)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
    return true;
}

bool key_char(char c) { return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; }

bool valid_key(std::string_view key) {
    if (key.empty() || key.size() > 64) return false;
    for (char c : key)
        if (!key_char(c)) return false;
    return true;
}

// True when "key=value" is one whole line of the datagram.
bool has_line(std::string_view datagram, const std::string& line) {
    for (std::size_t pos = datagram.find(line); pos != std::string_view::npos;
         pos = datagram.find(line, pos + 1)) {
        bool starts = pos == 0 || datagram[pos - 1] == '\n';
        std::size_t end = pos + line.size();
        bool ends = end == datagram.size() || datagram[end] == '\n';
        if (starts && ends) return true;
    }
    return false;
}

void check_accepted(std::string_view datagram, const NotifyMessage& message) {
    if (datagram.size() > kMaxNotifyMessage) std::abort();
    if (datagram.find('\0') != std::string_view::npos) std::abort();
    if (message.fields.empty()) std::abort();
    std::string encoded;
    for (const auto& [key, value] : message.fields) {
        if (!valid_key(key) || !printable(value)) std::abort();
        if (!has_line(datagram, key + "=" + value)) std::abort();
        if (message.get(key) == nullptr || !message.has(key, value)) std::abort();
        encoded += key + "=" + value + "\n";
    }
    if (encoded.size() > kMaxNotifyMessage) return;  // duplicates dropped: never longer
    auto again = parse_notify_message(encoded);
    if (!again || again->fields != message.fields) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view datagram(reinterpret_cast<const char*>(data), size);
    auto parsed = parse_notify_message(datagram);
    if (parsed)
        check_accepted(datagram, *parsed);
    else if (parsed.error().what.empty() || !printable(parsed.error().what))
        std::abort();
    return 0;
}
