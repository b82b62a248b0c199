// NotifyMessage: one sd_notify datagram from a worker ("READY=1\nSTATUS=...").
//
// Contract: the datagram is untrusted input. parse_notify_message accepts only
// newline-separated KEY=VALUE assignments with KEY of [A-Z0-9_], at most
// kMaxNotifyMessage bytes, no NUL bytes, values without control characters;
// anything else is an error that says what was wrong. Unknown keys are kept
// (systemd ignores them too) and the caller decides what it honours.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "base/result.h"

namespace infervisor {

inline constexpr size_t kMaxNotifyMessage = 4096;

struct NotifyMessage {
    std::map<std::string, std::string> fields;

    bool has(const std::string& key, const std::string& value) const;
    const std::string* get(const std::string& key) const;
};

Result<NotifyMessage> parse_notify_message(std::string_view datagram);

}  // namespace infervisor
