// Varlink messages: parsing calls and replies from one NUL-free message, and
// encoding them with their NUL terminator. Pure functions, no I/O: this is
// what the fuzzer drives.
//
// Strings from workers (STATUS= text, exit reasons) may hold invalid UTF-8;
// encoding replaces such bytes with U+FFFD instead of throwing.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "base/result.h"

namespace infervisor {

// Messages nested deeper than this are refused before they are parsed, so
// that no recursive walk over a hostile document can exhaust the stack.
inline constexpr int kMaxJsonDepth = 64;

// The largest call the daemon reads (bytes, without the NUL); a client with
// more to send gets the connection closed. Clients check against it first.
inline constexpr std::size_t kMaxCallBytes = 1 << 20;

struct VarlinkCall {
    std::string method;  // fully qualified: "io.infervisor.supervisor.List"
    nlohmann::json parameters = nlohmann::json::object();  // always an object
    bool more = false;
    bool oneway = false;

    std::string_view interface_name() const;  // before the last '.'
    std::string_view member_name() const;     // after it
};

// Why a message could not be taken as a call. `fatal`: the message was not a
// Varlink call at all (the connection is closed after the error reply);
// otherwise the call was well-formed but one of its fields was wrong.
struct CallRejected {
    std::string error;
    nlohmann::json parameters = nlohmann::json::object();
    bool fatal = false;
};

using ParsedCall = std::variant<VarlinkCall, CallRejected>;
ParsedCall parse_call(std::string_view message);

struct VarlinkReply {
    nlohmann::json parameters = nlohmann::json::object();
    std::string error;  // empty for a successful reply
    bool continues = false;

    bool failed() const { return !error.empty(); }
};
Result<VarlinkReply> parse_reply(std::string_view message);

// Encoded messages, NUL included.
std::string encode_call(const VarlinkCall& call);
std::string encode_reply(const nlohmann::json& parameters, bool continues);
std::string encode_error(std::string_view error, const nlohmann::json& parameters);

// Serializes without throwing on invalid UTF-8.
std::string dump_json(const nlohmann::json& value, int indent = -1);

// True when `text` nests arrays/objects deeper than `limit` (a lexical scan
// that honours strings and escapes; it does not validate).
bool json_nesting_exceeds(std::string_view text, int limit);

}  // namespace infervisor
