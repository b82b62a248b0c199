// parse_http_head: judges the start of an HTTP/1.x response as it arrives —
// the status line and the header block, nothing of the body.
//
// Contract: pure and linear in the input (with `seen`, across calls); never reads past the first
// blank line. The caller caps how much it feeds in (kMaxHttpHead): a worker may answer with endless
// headers, and its answer must cost bounded memory.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace infervisor {

constexpr size_t kMaxHttpHead = 16 * 1024;

struct HttpHead {
    enum class State { incomplete, complete, malformed };
    State state = State::incomplete;
    int status = 0;     // once the status line is complete and valid
    std::string error;  // malformed: what was wrong, for people
};

// `data` is everything received so far. `seen` is how much of it an earlier
// call already judged incomplete: the search for the blank line resumes
// there, so feeding an answer byte by byte stays linear.
HttpHead parse_http_head(std::string_view data, size_t seen = 0);

}  // namespace infervisor
