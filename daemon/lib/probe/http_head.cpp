#include "probe/http_head.h"

#include <algorithm>

namespace infervisor {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Shown in a message: at most `max` bytes, control and 8-bit bytes as '?'.
std::string printable(std::string_view text, size_t max) {
    std::string shown(text.substr(0, max));
    for (char& c : shown)
        if (static_cast<unsigned char>(c) < ' ' || static_cast<unsigned char>(c) >= 0x7f) c = '?';
    return shown;
}

// "HTTP/1.1 200 OK": version, one space, three digits, then a space or the end.
HttpHead parse_status_line(std::string_view line) {
    HttpHead head;
    head.state = HttpHead::State::malformed;
    if (line.size() < 12 || line.substr(0, 7) != "HTTP/1." || !is_digit(line[7]) ||
        line[8] != ' ' || !is_digit(line[9]) || !is_digit(line[10]) || !is_digit(line[11]) ||
        (line.size() > 12 && line[12] != ' ')) {
        head.error = "not an HTTP/1.x status line: '" + printable(line, 40) + "'";
        return head;
    }
    head.status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
    if (head.status < 100) {
        head.error = "status " + std::to_string(head.status) + " is not an HTTP status";
        return head;
    }
    head.state = HttpHead::State::incomplete;
    return head;
}

// Position just past the blank line that ends the header block, or npos.
size_t end_of_headers(std::string_view data, size_t from) {
    for (size_t i = data.find('\n', from); i != std::string_view::npos;
         i = data.find('\n', i + 1)) {
        if (i + 1 < data.size() && data[i + 1] == '\n') return i + 2;
        if (i + 2 < data.size() && data[i + 1] == '\r' && data[i + 2] == '\n') return i + 3;
    }
    return std::string_view::npos;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
        s.remove_suffix(1);
    return s;
}

bool equals_lower(std::string_view text, std::string_view lower) {
    return text.size() == lower.size() &&
           std::equal(text.begin(), text.end(), lower.begin(), [](char a, char b) {
               return (a >= 'A' && a <= 'Z' ? a - 'A' + 'a' : a) == b;
           });
}

void invalid_framing(HttpHead& head, std::string why) {
    if (head.framing == HttpHead::Framing::invalid) return;  // the first reason stands
    head.framing = HttpHead::Framing::invalid;
    head.framing_error = std::move(why);
}

// Content-Length: digits only (at most 18: no overflow); a repeated header must repeat the value.
void read_content_length(HttpHead& head, std::string_view value, bool& seen_length) {
    uint64_t length = 0;
    bool digits =
        !value.empty() && value.size() <= 18 && std::all_of(value.begin(), value.end(), is_digit);
    if (!digits) return invalid_framing(head, "bad Content-Length '" + printable(value, 40) + "'");
    for (char c : value) length = length * 10 + static_cast<uint64_t>(c - '0');
    if (seen_length && length != head.content_length)
        return invalid_framing(head, "two different Content-Length headers");
    seen_length = true;
    head.content_length = length;
}

// Transfer-Encoding: chunked alone; any other coding (gzip, ...) is not decoded here.
void read_transfer_encoding(HttpHead& head, std::string_view value, bool& chunked) {
    if (equals_lower(value, "chunked") && !chunked)
        chunked = true;
    else
        invalid_framing(head, "unsupported Transfer-Encoding '" + printable(value, 40) + "'");
}

// The header block between the status line's end and the blank line: one
// pass, each line once.
void read_fields(HttpHead& head, std::string_view block) {
    bool seen_length = false;
    bool chunked = false;
    while (!block.empty()) {
        size_t eol = block.find('\n');
        std::string_view line = block.substr(0, eol);
        block.remove_prefix(eol == std::string_view::npos ? block.size() : eol + 1);
        size_t colon = line.find(':');
        if (colon == std::string_view::npos) continue;  // not a field: nothing we use
        std::string_view name = line.substr(0, colon);
        std::string_view value = trim(line.substr(colon + 1));
        if (equals_lower(name, "content-length"))
            read_content_length(head, value, seen_length);
        else if (equals_lower(name, "transfer-encoding"))
            read_transfer_encoding(head, value, chunked);
        else if (equals_lower(name, "content-type") && head.content_type.empty())
            head.content_type = printable(value, kMaxHttpContentType);
    }
    if (head.framing == HttpHead::Framing::invalid) return;
    // Transfer-Encoding overrides Content-Length (RFC 9112 section 6.3, item 3).
    if (chunked)
        head.framing = HttpHead::Framing::chunked;
    else if (seen_length)
        head.framing = HttpHead::Framing::length;
}

}  // namespace

HttpHead parse_http_head(std::string_view data, size_t seen) {
    size_t eol = data.find('\n');
    if (eol == std::string_view::npos) {
        // Not even a status line yet; judge what there is once it cannot be one.
        if (data.size() >= 12 && data.substr(0, 7) != "HTTP/1.") return parse_status_line(data);
        return {};
    }
    std::string_view line = data.substr(0, eol);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    HttpHead head = parse_status_line(line);
    if (head.state == HttpHead::State::malformed) return head;
    // The status line's own newline may start the blank line ("...OK\r\n\r\n").
    const size_t from = std::max(eol, seen >= 3 ? seen - 3 : size_t{0});
    const size_t end = end_of_headers(data, from);
    if (end == std::string_view::npos) return head;
    head.state = HttpHead::State::complete;
    head.size = end;
    read_fields(head, data.substr(eol + 1, end - (eol + 1)));
    return head;
}

bool http_status_has_no_body(int status) { return status < 200 || status == 204 || status == 304; }

}  // namespace infervisor
