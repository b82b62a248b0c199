#include "probe/http_chunked.h"

#include <algorithm>

namespace infervisor {

namespace {

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// At most 15 hex digits: 2^60 bytes, far above any max_body, and no overflow.
constexpr size_t kMaxChunkSizeDigits = 15;

}  // namespace

void ChunkedBody::fail(std::string why) {
    state_ = State::error;
    error_ = "chunked body: " + std::move(why);
}

ChunkedBody::State ChunkedBody::feed(std::string_view data) {
    size_t at = 0;
    while (state_ == State::more && at < data.size()) {
        const char c = data[at];
        switch (step_) {
            case Step::size:
                at = take_size_digit(data, at);
                break;
            case Step::size_space:  // whitespace after the size: only ';' or the line's end may
                                    // follow
                if (c == ';' || c == '\r' || c == '\n') {
                    step_ = Step::extension;
                    break;
                }
                ++at;
                if (c != ' ' && c != '\t')
                    fail("bad character after a chunk size");
                else if (++line_ > kMaxChunkLine)
                    fail("chunk-size line longer than " + std::to_string(kMaxChunkLine));
                break;
            case Step::extension:  // ";name=value" after the size: skipped, bounded
                ++at;
                if (++line_ > kMaxChunkLine)
                    fail("chunk-size line longer than " + std::to_string(kMaxChunkLine));
                else if (c == '\r')
                    step_ = Step::size_lf;
                else if (c == '\n')
                    end_of_size_line();
                break;
            case Step::size_lf:
                ++at;
                if (c != '\n')
                    fail("no LF after a chunk-size line's CR");
                else
                    end_of_size_line();
                break;
            case Step::data:
                at = take_data(data, at);
                break;
            case Step::data_cr:
                ++at;
                if (c == '\r')
                    step_ = Step::data_lf;
                else if (c == '\n')
                    step_ = Step::size;
                else
                    fail("no CRLF after a chunk's data");
                break;
            case Step::data_lf:
                ++at;
                if (c != '\n')
                    fail("no CRLF after a chunk's data");
                else
                    step_ = Step::size;
                break;
            case Step::trailer:
                ++at;
                take_trailer(c);
                break;
        }
    }
    return state_;
}

size_t ChunkedBody::take_size_digit(std::string_view data, size_t at) {
    const char c = data[at];
    int value = hex_value(c);
    if (value >= 0) {
        if (++digits_ > kMaxChunkSizeDigits) {
            fail("chunk size of more than " + std::to_string(kMaxChunkSizeDigits) + " hex digits");
            return at + 1;
        }
        chunk_ = chunk_ * 16 + static_cast<uint64_t>(value);
        line_ = digits_;
        return at + 1;
    }
    if (digits_ == 0) {
        fail("a chunk size must start with a hex digit");
        return at + 1;
    }
    if (c == ';') {
        step_ = Step::extension;
        return at;  // the extension step counts this byte against the line's bound
    }
    if (c == ' ' || c == '\t') {
        step_ = Step::size_space;
        return at;
    }
    if (c == '\r') {
        step_ = Step::size_lf;
        return at + 1;
    }
    if (c == '\n') {
        end_of_size_line();
        return at + 1;
    }
    fail("bad character in a chunk size");
    return at + 1;
}

// The size line is read: a chunk's data follows, or (size 0) the trailer.
void ChunkedBody::end_of_size_line() {
    digits_ = 0;
    line_ = 0;
    if (chunk_ == 0) {
        step_ = Step::trailer;
        return;
    }
    if (chunk_ > max_body_ - body_.size())
        return fail("body longer than " + std::to_string(max_body_) + " bytes");
    step_ = Step::data;
}

size_t ChunkedBody::take_data(std::string_view data, size_t at) {
    const size_t n = std::min<uint64_t>(chunk_, data.size() - at);
    body_.append(data.substr(at, n));
    chunk_ -= n;
    if (chunk_ == 0) step_ = Step::data_cr;
    return at + n;
}

// Trailer fields after the last chunk, each ended by a line break; an empty
// line ends the body. Skipped, bounded.
void ChunkedBody::take_trailer(char c) {
    if (++trailer_bytes_ > kMaxChunkTrailer) {
        return fail("trailer longer than " + std::to_string(kMaxChunkTrailer) + " bytes");
    }
    if (c == '\r') return;  // a CR before the LF ends nothing by itself
    if (c != '\n') {
        ++line_;
        return;
    }
    if (line_ == 0) state_ = State::done;
    line_ = 0;
}

}  // namespace infervisor
