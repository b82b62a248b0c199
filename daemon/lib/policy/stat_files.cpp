#include "policy/stat_files.h"

#include "base/file_io.h"
#include "cgroup/stat_parse.h"

namespace infervisor {

MemInfo parse_meminfo(std::string_view text) {
    MemInfo out;
    while (!text.empty()) {
        size_t eol = text.find('\n');
        std::string_view line = text.substr(0, eol);
        text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
        size_t colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        std::string_view key = line.substr(0, colon);
        std::optional<uint64_t>* target = key == "MemTotal"       ? &out.mem_total
                                          : key == "MemAvailable" ? &out.mem_available
                                          : key == "SwapTotal"    ? &out.swap_total
                                          : key == "SwapFree"     ? &out.swap_free
                                                                  : nullptr;
        if (!target) continue;
        std::string_view value = trim(line.substr(colon + 1));
        uint64_t scale = 1;
        if (value.size() > 3 && value.substr(value.size() - 3) == " kB") {
            value.remove_suffix(3);
            scale = 1024;
        }
        if (auto number = parse_u64(value)) *target = *number * scale;
    }
    return out;
}

Result<MemInfo> read_meminfo(const std::filesystem::path& procfs) {
    auto text = read_file(procfs / "meminfo");
    if (!text) return text.error();
    return parse_meminfo(*text);
}

}  // namespace infervisor
