#include "probe/http_head.h"

#include <algorithm>

namespace infervisor {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// "HTTP/1.1 200 OK": version, one space, three digits, then a space or the end.
HttpHead parse_status_line(std::string_view line) {
    HttpHead head;
    head.state = HttpHead::State::malformed;
    if (line.size() < 12 || line.substr(0, 7) != "HTTP/1." || !is_digit(line[7]) ||
        line[8] != ' ' || !is_digit(line[9]) || !is_digit(line[10]) || !is_digit(line[11]) ||
        (line.size() > 12 && line[12] != ' ')) {
        std::string shown(line.substr(0, 40));
        for (char& c : shown)
            if (static_cast<unsigned char>(c) < ' ' || static_cast<unsigned char>(c) >= 0x7f)
                c = '?';
        head.error = "not an HTTP/1.x status line: '" + shown + "'";
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
    if (end_of_headers(data, from) != std::string_view::npos)
        head.state = HttpHead::State::complete;
    return head;
}

}  // namespace infervisor
