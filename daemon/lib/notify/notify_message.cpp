#include "notify/notify_message.h"

namespace infervisor {

bool NotifyMessage::has(const std::string& key, const std::string& value) const {
    auto it = fields.find(key);
    return it != fields.end() && it->second == value;
}

const std::string* NotifyMessage::get(const std::string& key) const {
    auto it = fields.find(key);
    return it == fields.end() ? nullptr : &it->second;
}

namespace {

bool valid_key(std::string_view key) {
    if (key.empty() || key.size() > 64) return false;
    for (char c : key)
        if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
    return true;
}

bool valid_value(std::string_view value) {
    for (char c : value)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
    return true;
}

}  // namespace

Result<NotifyMessage> parse_notify_message(std::string_view datagram) {
    if (datagram.size() > kMaxNotifyMessage)
        return plain_error("message of " + std::to_string(datagram.size()) + " bytes exceeds " +
                           std::to_string(kMaxNotifyMessage));
    if (datagram.find('\0') != std::string_view::npos)
        return plain_error("message contains a NUL byte");
    NotifyMessage msg;
    size_t pos = 0;
    while (pos < datagram.size()) {
        size_t eol = datagram.find('\n', pos);
        if (eol == std::string_view::npos) eol = datagram.size();
        std::string_view line = datagram.substr(pos, eol - pos);
        pos = eol + 1;
        if (line.empty()) continue;
        size_t eq = line.find('=');
        if (eq == std::string_view::npos)
            return plain_error("line without '=' (expected KEY=VALUE)");
        std::string_view key = line.substr(0, eq), value = line.substr(eq + 1);
        if (!valid_key(key)) return plain_error("invalid key (expected [A-Z0-9_]{1,64})");
        if (!valid_value(value))
            return plain_error("value of " + std::string(key) + " has control characters");
        msg.fields[std::string(key)] = std::string(value);
    }
    if (msg.fields.empty()) return plain_error("empty message");
    return msg;
}

}  // namespace infervisor
