#include "config/config_loader.h"

#include <algorithm>
#include <system_error>

#include "base/file_io.h"
#include "config/config_limits.h"
#include "config/config_parser.h"
#include "config/config_validator.h"

namespace infervisor {

namespace fs = std::filesystem;

fs::path ConfigSource::effective_workers_dir() const {
    if (!workers_dir.empty()) return workers_dir;
    return main_file.parent_path() / "workers.d";
}

namespace {

namespace limits = config_limits;

std::vector<fs::path> list_dropins(const fs::path& dir, ConfigErrors& errors) {
    std::vector<fs::path> files;
    std::error_code ec;
    if (!fs::exists(dir, ec)) return files;
    // increment(ec), not range-for, whose ++ throws on a read error.
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const auto& p = it->path();
        if (p.extension() != ".yaml" || p.filename().string().front() == '.') continue;
        if (files.size() == limits::kMaxDropinFiles) {
            errors.add_unplaced("directory " + dir.string() + " holds more than " +
                                std::to_string(limits::kMaxDropinFiles) +
                                " *.yaml files (the limit); none of them was read");
            return {};
        }
        files.push_back(p);
    }
    if (ec) errors.add_unplaced("cannot read directory " + dir.string() + ": " + ec.message());
    std::sort(files.begin(), files.end());
    return files;
}

// `total` counts the bytes of the files read so far, against kMaxTotalBytes.
void parse_file(ConfigParser& parser, const fs::path& path, ConfigFileKind kind, LoadedConfig& out,
                std::size_t& total) {
    out.errors.set_file(path.string());
    auto text = read_regular_file(path, limits::kMaxFileBytes,
                                  "a configuration file (put workers into drop-in files)");
    if (!text) {
        out.errors.add_unplaced("cannot read: " + text.error().message());
        return;
    }
    total += text->size();
    if (total > limits::kMaxTotalBytes) {
        out.errors.add_unplaced("not read: the configuration files together are larger than " +
                                std::to_string(limits::kMaxTotalBytes >> 20) +
                                " MiB, the limit for one configuration");
        return;
    }
    out.config.files.push_back(path);
    parser.parse(*text, path.string(), kind, out.config, out.errors);
}

}  // namespace

LoadedConfig load_config(const ConfigSource& source) {
    LoadedConfig out;
    ConfigParser parser;
    std::size_t total = 0;
    parse_file(parser, source.main_file, ConfigFileKind::main, out, total);
    for (const auto& dropin : list_dropins(source.effective_workers_dir(), out.errors))
        parse_file(parser, dropin, ConfigFileKind::dropin, out, total);
    validate_config(out.config, out.errors);
    return out;
}

LoadedConfig load_config_text(std::string_view text, const std::string& name,
                              const ValidationOptions& options) {
    LoadedConfig out;
    out.errors.set_file(name);
    if (text.size() > limits::kMaxFileBytes) {
        out.errors.add_unplaced("the configuration text is larger than " +
                                std::to_string(limits::kMaxFileBytes >> 10) +
                                " KiB, the limit for one configuration file");
        return out;
    }
    ConfigParser parser;
    parser.parse(text, name, ConfigFileKind::main, out.config, out.errors);
    validate_config(out.config, out.errors, options);
    return out;
}

}  // namespace infervisor
