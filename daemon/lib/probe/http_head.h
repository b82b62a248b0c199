// parse_http_head: judges the start of an HTTP/1.x response as it arrives —
// the status line and the header block, nothing of the body — and, once the
// block is complete, what it says about the body that follows: its framing
// (Content-Length, Transfer-Encoding: chunked, or up to the end of the
// connection) and its Content-Type.
//
// Contract: pure and linear in the input (with `seen`, across calls); never reads past the first
// blank line. The caller caps how much it feeds in (kMaxHttpHead): a worker may answer with endless
// headers, and its answer must cost bounded memory. A framing the client cannot read (a bad
// Content-Length, a Transfer-Encoding other than chunked) does not make the head malformed: a
// caller that reads no body (a health probe) judges the status alone; one that reads the body
// fails with `framing_error`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace infervisor {

constexpr size_t kMaxHttpHead = 16 * 1024;
// Content-Type is kept up to this many bytes (a media type and its parameters).
constexpr size_t kMaxHttpContentType = 256;

struct HttpHead {
    enum class State { incomplete, complete, malformed };
    // How the body is delimited (RFC 9112 section 6.3).
    enum class Framing { to_end, length, chunked, invalid };
    State state = State::incomplete;
    int status = 0;     // once the status line is complete and valid
    std::string error;  // malformed: what was wrong, for people

    // Once complete:
    size_t size = 0;  // bytes of status line and headers with the blank line: the body starts here
    Framing framing = Framing::to_end;
    uint64_t content_length = 0;  // Framing::length
    std::string framing_error;    // Framing::invalid: why, for people
    std::string content_type;     // as sent (control bytes as '?'), or empty
};

// `data` is everything received so far. `seen` is how much of it an earlier
// call already judged incomplete: the search for the blank line resumes
// there, so feeding an answer byte by byte stays linear.
HttpHead parse_http_head(std::string_view data, size_t seen = 0);

// True when an answer with this status has no body whatever its headers say
// (1xx, 204 No Content, 304 Not Modified; RFC 9112 section 6.3).
bool http_status_has_no_body(int status);

}  // namespace infervisor
