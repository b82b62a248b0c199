#include "cgroup/psi.h"

#include <charconv>
#include <string>

#include "base/file_io.h"

namespace infervisor {

namespace {

template <class T>
bool parse_number(std::string_view text, T& out) {
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc() && ptr == text.data() + text.size();
}

// Parses the "avg10=… avg60=… avg300=… total=…" part of one line.
Result<PsiAverages> parse_averages(std::string_view fields) {
    PsiAverages out;
    int seen = 0;
    while (!fields.empty()) {
        size_t end = fields.find(' ');
        std::string_view field = fields.substr(0, end);
        fields = end == std::string_view::npos ? std::string_view() : fields.substr(end + 1);
        if (field.empty()) continue;
        size_t eq = field.find('=');
        if (eq == std::string_view::npos)
            return plain_error("malformed PSI field '" + std::string(field) + "'");
        std::string_view key = field.substr(0, eq), value = field.substr(eq + 1);
        bool ok = true;
        if (key == "avg10")
            ok = parse_number(value, out.avg10), seen |= 1;
        else if (key == "avg60")
            ok = parse_number(value, out.avg60), seen |= 2;
        else if (key == "avg300")
            ok = parse_number(value, out.avg300), seen |= 4;
        else if (key == "total")
            ok = parse_number(value, out.total_us), seen |= 8;
        if (!ok) return plain_error("malformed PSI value '" + std::string(field) + "'");
    }
    if (seen != 15) return plain_error("PSI line lacks one of avg10, avg60, avg300, total");
    return out;
}

}  // namespace

Result<PsiReading> parse_psi(std::string_view text) {
    std::optional<PsiAverages> some, full;
    while (!text.empty()) {
        size_t eol = text.find('\n');
        std::string_view line = trim(text.substr(0, eol));
        text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
        size_t space = line.find(' ');
        std::string_view kind = line.substr(0, space);
        if (kind != "some" && kind != "full") continue;
        auto averages =
            parse_averages(space == std::string_view::npos ? "" : line.substr(space + 1));
        if (!averages)
            return plain_error("'" + std::string(kind) + "' line: " + averages.error().what);
        (kind == "some" ? some : full) = *averages;
    }
    if (!some) return plain_error("no 'some' line in PSI text");
    return PsiReading{*some, full};
}

Result<PsiReading> read_psi(const std::filesystem::path& path) {
    auto text = read_file(path);
    if (!text) return text.error();
    auto reading = parse_psi(*text);
    if (!reading) return plain_error(path.string() + ": " + reading.error().what);
    return reading;
}

}  // namespace infervisor
