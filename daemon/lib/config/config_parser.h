// Parsing of configuration documents into plain structs.
//
// Contract: parsing never throws and never stops at the first problem; every
// problem goes into ConfigErrors with its file:line:column. Cross-field and
// cross-file checks are validate_config()'s job (config_validator.h).
#pragma once

#include <string>
#include <string_view>

#include "config/daemon_config.h"
#include "yaml/config_errors.h"

namespace YAML {
class Node;
}

namespace infervisor {

enum class ConfigFileKind {
    main,    // infervisor.yaml: daemon settings, `defaults:` and `workers:`
    dropin,  // workers.d/*.yaml: only `workers:`
};

class ConfigParser {
  public:
    // Parses one document and appends what it defines to `out`. Defaults from
    // a main file apply to the workers of every document parsed after it.
    void parse(std::string_view text, const std::string& file, ConfigFileKind kind, Config& out,
               ConfigErrors& errors);

  private:
    void parse_daemon_settings(const YAML::Node& root, Config& out, ConfigErrors& errors,
                               class YamlMap& map);
    void parse_workers(const YAML::Node& list, Config& out, ConfigErrors& errors);

    // Configuration files default to a uid of each worker's own
    // (user: dynamic); specs built in code keep WorkerSpec's own default.
    WorkerSpec defaults_ = [] {
        WorkerSpec spec;
        spec.user = kDynamicUser;
        return spec;
    }();
    bool defaults_malformed_ = false;  // `defaults:` had an error: every worker inherits it
};

// Reads the worker keys present in `node` on top of `spec` (absent keys keep
// their value, which is how `defaults:` work). `require_identity` demands
// name and command (false when parsing `defaults:`).
void parse_worker_fields(const YAML::Node& node, WorkerSpec& spec, ConfigErrors& errors,
                         bool require_identity);

}  // namespace infervisor
