// libFuzzer target: the head of an HTTP answer, which a worker's health
// endpoint (or an engine's API) writes, and a chunked body after it
// (untrusted input, see probe/http_head.h and probe/http_chunked.h).
//
// Whatever the bytes, parse_http_head must not crash, and:
//  - complete means a valid status line (status 100-999) and a blank line,
//    and the body starts within the input;
//  - fed in two pieces (with `seen`), the verdict is the same as in one;
//  - a malformed verdict's text, a framing error and the Content-Type have
//    no control characters (they go into the journal).
// The bytes after a complete head are then de-chunked (ChunkedBody): never
// more body than its limit, and the same state and body whether fed whole or
// in two pieces.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "probe/http_chunked.h"
#include "probe/http_head.h"

using namespace infervisor;

namespace {

void require_printable(std::string_view text) {
    for (char c : text)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) std::abort();
}

void dechunk(std::string_view body) {
    constexpr size_t kLimit = 4096;
    ChunkedBody whole(kLimit);
    whole.feed(body);
    if (whole.body().size() > kLimit) std::abort();
    require_printable(whole.error());
    ChunkedBody pieces(kLimit);
    pieces.feed(body.substr(0, body.size() / 3));
    pieces.feed(body.substr(body.size() / 3));
    if (pieces.state() != whole.state()) std::abort();
    if (whole.state() == ChunkedBody::State::done && pieces.body() != whole.body()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    HttpHead whole = parse_http_head(text);
    if (whole.state == HttpHead::State::complete &&
        (whole.status < 100 || whole.status > 999 || text.find('\n') == std::string_view::npos ||
         whole.size == 0 || whole.size > size))
        std::abort();
    if (whole.state == HttpHead::State::malformed) require_printable(whole.error);
    require_printable(whole.framing_error);
    require_printable(whole.content_type);
    const size_t half = size / 2;
    HttpHead first = parse_http_head(text.substr(0, half));
    if (first.state == HttpHead::State::incomplete) {
        HttpHead again = parse_http_head(text, half);
        if (again.state != whole.state || again.status != whole.status ||
            again.size != whole.size || again.framing != whole.framing)
            std::abort();
    }
    if (whole.state == HttpHead::State::complete) dechunk(text.substr(whole.size));
    return 0;
}
