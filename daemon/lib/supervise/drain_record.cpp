#include "supervise/drain_record.h"

#include <unistd.h>

#include "base/file_io.h"
#include "config/config_validator.h"

namespace infervisor {

namespace fs = std::filesystem;

namespace {
constexpr std::string_view kHeader = "infervisor-drained 1";
}  // namespace

std::string format_drain_record(const std::vector<std::string>& were_up) {
    std::string text = std::string(kHeader) + "\n";
    for (const auto& name : were_up) text += "up " + name + "\n";
    return text;
}

Result<std::vector<std::string>> parse_drain_record(std::string_view text) {
    if (text.size() > kMaxDrainRecordSize) return plain_error("larger than a drain record can be");
    std::vector<std::string> names;
    size_t line_no = 0;
    while (!text.empty()) {
        size_t end = text.find('\n');
        if (end == std::string_view::npos) return plain_error("its last line is not ended");
        std::string_view line = text.substr(0, end);
        text.remove_prefix(end + 1);
        ++line_no;
        if (line_no == 1) {
            if (line != kHeader) return plain_error("not a drain record of this version");
            continue;
        }
        if (line.substr(0, 3) != "up " || !is_valid_worker_name(std::string(line.substr(3))))
            return plain_error("line " + std::to_string(line_no) + " is not 'up NAME'");
        names.emplace_back(line.substr(3));
    }
    if (line_no == 0) return plain_error("empty");
    return names;
}

fs::path drain_record_path(const fs::path& runtime_dir) { return runtime_dir / "drained"; }

Result<void> write_drain_record(const fs::path& runtime_dir,
                                const std::vector<std::string>& were_up) {
    return replace_file(drain_record_path(runtime_dir), format_drain_record(were_up));
}

std::optional<Result<std::vector<std::string>>> read_drain_record(const fs::path& runtime_dir) {
    fs::path path = drain_record_path(runtime_dir);
    auto text = read_regular_file(path, kMaxDrainRecordSize, "the drain record");
    if (!text && text.error().code == ENOENT) return std::nullopt;
    if (!text) return Result<std::vector<std::string>>(text.error());
    auto names = parse_drain_record(*text);
    if (!names)
        return Result<std::vector<std::string>>(
            plain_error(path.string() + ": " + names.error().message()));
    return names;
}

Result<void> remove_drain_record(const fs::path& runtime_dir) {
    fs::path path = drain_record_path(runtime_dir);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
        return errno_error("remove " + path.string());
    return {};
}

}  // namespace infervisor
