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

std::string too_many_dropins(const std::string& where) {
    return where + " holds more than " + std::to_string(limits::kMaxDropinFiles) +
           " *.yaml files (the limit); none of them was read";
}

std::string too_large_together() {
    return "not read: the configuration files together are larger than " +
           std::to_string(limits::kMaxTotalBytes >> 20) + " MiB, the limit for one configuration";
}

std::vector<fs::path> list_dropins(const fs::path& dir, ConfigErrors& errors) {
    std::vector<fs::path> files;
    std::error_code ec;
    if (!fs::exists(dir, ec)) return files;
    errors.set_file(dir.string());
    // increment(ec), not range-for, whose ++ throws on a read error.
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const auto& p = it->path();
        if (p.extension() != ".yaml" || p.filename().string().front() == '.') continue;
        if (files.size() == limits::kMaxDropinFiles) {
            errors.add_unplaced(too_many_dropins("the directory"));
            return {};
        }
        files.push_back(p);
    }
    if (ec) errors.add_unplaced("cannot read the directory: " + ec.message());
    std::sort(files.begin(), files.end());
    return files;
}

// nullopt when it cannot be read or would pass the limit of all files
// together (`total`: the bytes read so far); the error is in `errors`.
std::optional<ConfigText> read_text(const fs::path& path, std::size_t& total,
                                    ConfigErrors& errors) {
    errors.set_file(path.string());
    auto text = read_regular_file(path, limits::kMaxFileBytes,
                                  "a configuration file (put workers into drop-in files)");
    if (!text) {
        errors.add_unplaced("cannot read: " + text.error().message());
        return std::nullopt;
    }
    total += text->size();
    if (total > limits::kMaxTotalBytes) {
        errors.add_unplaced(too_large_together());
        return std::nullopt;
    }
    return ConfigText{path.string(), std::move(*text)};
}

// `total` counts the bytes parsed so far, against kMaxTotalBytes.
void parse_text(ConfigParser& parser, const ConfigText& text, ConfigFileKind kind,
                LoadedConfig& out, std::size_t& total) {
    out.errors.set_file(text.file);
    if (text.text.size() > limits::kMaxFileBytes) {
        out.errors.add_unplaced("the configuration text is larger than " +
                                std::to_string(limits::kMaxFileBytes >> 10) +
                                " KiB, the limit for one configuration file");
        return;
    }
    total += text.text.size();
    if (total > limits::kMaxTotalBytes) {
        out.errors.add_unplaced(too_large_together());
        return;
    }
    out.config.files.push_back(text.file);
    parser.parse(text.text, text.file, kind, out.config, out.errors);
}

}  // namespace

ConfigTexts read_config_texts(const ConfigSource& source, ConfigErrors& errors) {
    ConfigTexts texts;
    std::size_t total = 0;
    // The main file's name stays even when it cannot be read: errors of the
    // drop-ins' validation may still name it.
    texts.main.file = source.main_file.string();
    if (auto main = read_text(source.main_file, total, errors)) texts.main = std::move(*main);
    texts.dropins = read_dropin_texts(source.effective_workers_dir(), errors, total);
    return texts;
}

std::vector<ConfigText> read_dropin_texts(const fs::path& dir, ConfigErrors& errors,
                                          std::size_t& total) {
    std::vector<ConfigText> dropins;
    for (const auto& path : list_dropins(dir, errors))
        if (auto dropin = read_text(path, total, errors)) dropins.push_back(std::move(*dropin));
    return dropins;
}

LoadedConfig load_config_texts(const ConfigTexts& texts, const ValidationOptions& options,
                               ConfigErrors errors) {
    LoadedConfig out;
    out.errors = std::move(errors);
    ConfigParser parser;
    std::size_t total = 0;
    parse_text(parser, texts.main, ConfigFileKind::main, out, total);
    if (texts.dropins.size() > limits::kMaxDropinFiles) {
        out.errors.set_file(texts.main.file);
        out.errors.add_unplaced(too_many_dropins("its workers directory"));
    } else {
        for (const auto& dropin : texts.dropins)
            parse_text(parser, dropin, ConfigFileKind::dropin, out, total);
    }
    validate_config(out.config, out.errors, options);
    return out;
}

LoadedConfig load_config(const ConfigSource& source) {
    ConfigErrors errors;
    auto texts = read_config_texts(source, errors);
    return load_config_texts(texts, {}, std::move(errors));
}

LoadedConfig load_config_text(std::string_view text, const std::string& name,
                              const ValidationOptions& options) {
    return load_config_texts({{name, std::string(text)}, {}}, options);
}

}  // namespace infervisor
