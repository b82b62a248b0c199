#include "workdir/workdir_config.h"

#include <sys/stat.h>

#include <optional>

#include "workdir/workdir_validation.h"

namespace infervisor {

namespace {

// Reads `node` as a worker directory path; reports a bad one where it stands.
void parse_path_node(const YAML::Node* node, const std::string& key, std::filesystem::path& out,
                     ConfigErrors& errors) {
    if (!node) return;
    auto text = YamlMap::scalar(*node, errors, "'" + key + "'");
    if (!text) return;
    auto path = check_worker_dir_path(*text);
    if (!path) {
        errors.add(node->Mark(), "'" + key + "': " + path.error().what);
        return;
    }
    out = *path;
}

void parse_path(YamlMap& map, const std::string& key, std::filesystem::path& out,
                ConfigErrors& errors, Required required = Required::no) {
    auto node = map.take(key, required);
    parse_path_node(node ? &*node : nullptr, key, out, errors);
}

// `workdir: PATH` or `workdir: {path: PATH, adopt: true}`.
void parse_workdir(YamlMap& worker, WorkDirSpec& spec, ConfigErrors& errors) {
    auto node = worker.take("workdir");
    if (!node) return;
    if (!node->IsMap()) return parse_path_node(&*node, "workdir", spec.workdir, errors);
    YamlMap map(*node, errors, "'workdir'");
    parse_path(map, "path", spec.workdir, errors, Required::yes);
    map.get_bool("adopt", spec.adopt_workdir);
    map.finish();
}

void parse_mode(YamlMap& map, mode_t& out, ConfigErrors& errors) {
    auto node = map.take("mode");
    if (!node) return;
    auto text = YamlMap::scalar(*node, errors, "'mode'");
    if (!text) return;
    auto mode = parse_dir_mode(*text);
    if (!mode) {
        errors.add(node->Mark(), "'mode': " + mode.error().what);
        return;
    }
    out = *mode;
}

std::optional<ExtraDirSpec> parse_extra_dir(const YAML::Node& item, ConfigErrors& errors) {
    YamlMap map(item, errors, "an item of 'extra_dirs'");
    if (!map.valid()) return std::nullopt;
    ExtraDirSpec dir;
    parse_path(map, "path", dir.path, errors, Required::yes);
    parse_mode(map, dir.mode, errors);
    map.get_bool("protect", dir.protect);
    map.get_bool("adopt", dir.adopt);
    map.finish();
    if (dir.path.empty()) return std::nullopt;
    return dir;
}

void parse_extra_dirs(YamlMap& worker, std::vector<ExtraDirSpec>& out, ConfigErrors& errors) {
    auto node = worker.take("extra_dirs");
    if (!node || node->IsNull()) return;
    if (!node->IsSequence()) {
        errors.add(node->Mark(), "'extra_dirs' must be a list of {path, mode, protect, adopt}");
        return;
    }
    if (!check_item_count(*node, kMaxExtraDirs, errors, "'extra_dirs'")) return;
    for (const auto& item : *node)
        if (auto dir = parse_extra_dir(item, errors)) out.push_back(std::move(*dir));
}

}  // namespace

Result<mode_t> parse_dir_mode(const std::string& text) {
    if (text.empty() || text.size() > 5 || text.find_first_not_of("01234567") != std::string::npos)
        return plain_error("expected an octal mode such as 0700 or 0750, not '" + text + "'");
    mode_t mode = static_cast<mode_t>(std::stoul(text, nullptr, 8));
    if (mode > 07777) return plain_error("mode " + text + " has bits beyond 07777");
    if (mode & S_ISUID)
        return plain_error("mode " + text + ": set-user-ID makes no sense on a directory");
    return mode;
}

void parse_workdir_keys(YamlMap& worker, WorkDirSpec& spec, ConfigErrors& errors) {
    parse_workdir(worker, spec, errors);
    parse_extra_dirs(worker, spec.extra_dirs, errors);
    worker.get_size("workdir_quota", spec.quota);
    worker.get_bool("remove_workdir_on_removal", spec.remove_on_removal);
}

}  // namespace infervisor
