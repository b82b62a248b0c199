// libFuzzer target: the head of an HTTP answer, which a worker's health
// endpoint writes (untrusted input, see probe/http_head.h).
//
// Whatever the bytes, parse_http_head must not crash, and:
//  - complete means a valid status line (status 100-999) and a blank line;
//  - fed in two pieces (with `seen`), the verdict is the same as in one;
//  - a malformed verdict's text has no control characters (it goes into the
//    journal).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "probe/http_head.h"

using namespace infervisor;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    HttpHead whole = parse_http_head(text);
    if (whole.state == HttpHead::State::complete &&
        (whole.status < 100 || whole.status > 999 || text.find('\n') == std::string_view::npos))
        std::abort();
    if (whole.state == HttpHead::State::malformed)
        for (char c : whole.error)
            if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) std::abort();
    const size_t half = size / 2;
    HttpHead first = parse_http_head(text.substr(0, half));
    if (first.state == HttpHead::State::incomplete) {
        HttpHead again = parse_http_head(text, half);
        if (again.state != whole.state || again.status != whole.status) std::abort();
    }
    return 0;
}
