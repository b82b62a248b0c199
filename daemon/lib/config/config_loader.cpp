#include "config/config_loader.h"

#include <algorithm>
#include <system_error>

#include "base/file_io.h"
#include "config/config_parser.h"
#include "config/config_validator.h"

namespace infervisor {

namespace fs = std::filesystem;

fs::path ConfigSource::effective_workers_dir() const {
    if (!workers_dir.empty()) return workers_dir;
    return main_file.parent_path() / "workers.d";
}

namespace {

std::vector<fs::path> list_dropins(const fs::path& dir, ConfigErrors& errors) {
    std::vector<fs::path> files;
    std::error_code ec;
    if (!fs::exists(dir, ec)) return files;
    // increment(ec), not range-for, whose ++ throws on a read error.
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const auto& p = it->path();
        if (p.extension() == ".yaml" && p.filename().string().front() != '.') files.push_back(p);
    }
    if (ec) errors.add_unplaced("cannot read directory " + dir.string() + ": " + ec.message());
    std::sort(files.begin(), files.end());
    return files;
}

void parse_file(ConfigParser& parser, const fs::path& path, ConfigFileKind kind,
                LoadedConfig& out) {
    out.errors.set_file(path.string());
    auto text = read_file(path);
    if (!text) {
        out.errors.add_unplaced("cannot read: " + text.error().message());
        return;
    }
    out.config.files.push_back(path);
    parser.parse(*text, path.string(), kind, out.config, out.errors);
}

}  // namespace

LoadedConfig load_config(const ConfigSource& source) {
    LoadedConfig out;
    ConfigParser parser;
    parse_file(parser, source.main_file, ConfigFileKind::main, out);
    for (const auto& dropin : list_dropins(source.effective_workers_dir(), out.errors))
        parse_file(parser, dropin, ConfigFileKind::dropin, out);
    validate_config(out.config, out.errors);
    return out;
}

LoadedConfig load_config_text(std::string_view text, const std::string& name) {
    LoadedConfig out;
    ConfigParser parser;
    parser.parse(text, name, ConfigFileKind::main, out.config, out.errors);
    validate_config(out.config, out.errors);
    return out;
}

}  // namespace infervisor
