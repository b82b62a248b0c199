// ChunkedBody: de-chunks an HTTP/1.1 body sent with Transfer-Encoding:
// chunked (RFC 9112 section 7.1) as its bytes arrive, into at most
// `max_body` bytes.
//
// Contract: pure, incremental and linear: each byte fed is looked at once,
// whatever the pieces. Memory is bounded: the body by max_body (a chunk
// that would pass it is an error, not a truncation), a chunk-size line with
// its extensions by kMaxChunkLine, the trailer section by kMaxChunkTrailer.
// Chunk sizes are hex digits only (at most 15 of them: no overflow); a
// missing CRLF after a chunk's data is an error. After done or error,
// further input is not looked at.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace infervisor {

constexpr size_t kMaxChunkLine = 1024;
constexpr size_t kMaxChunkTrailer = 16 * 1024;

class ChunkedBody {
  public:
    enum class State { more, done, error };

    explicit ChunkedBody(size_t max_body) : max_body_(max_body) {}

    // Takes the next bytes of the body as sent. Returns the state after
    // them; on done, `data` past the body's end is ignored (one request per
    // connection: nothing may follow).
    State feed(std::string_view data);

    State state() const { return state_; }
    const std::string& body() const { return body_; }
    std::string take_body() { return std::move(body_); }
    const std::string& error() const { return error_; }  // State::error: what, for people

  private:
    enum class Step { size, size_space, extension, size_lf, data, data_cr, data_lf, trailer };

    size_t take_size_digit(std::string_view data, size_t at);
    void end_of_size_line();
    size_t take_data(std::string_view data, size_t at);
    void take_trailer(char c);
    void fail(std::string why);

    size_t max_body_;
    State state_ = State::more;
    Step step_ = Step::size;
    std::string body_;
    std::string error_;
    uint64_t chunk_ = 0;        // the current chunk's size, then what is left of it
    size_t digits_ = 0;         // hex digits of the current size line
    size_t line_ = 0;           // bytes of the current size line or trailer line
    size_t trailer_bytes_ = 0;  // the whole trailer section
};

}  // namespace infervisor
