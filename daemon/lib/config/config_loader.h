// Loading the configuration from disk: the main file, then every *.yaml in
// the workers directory in name order, parsed and validated as one.
#pragma once

#include <filesystem>
#include <string_view>

#include "config/config_validator.h"
#include "config/daemon_config.h"
#include "yaml/config_errors.h"

namespace infervisor {

struct ConfigSource {
    std::filesystem::path main_file = "/etc/infervisor/infervisor.yaml";
    // Empty: "workers.d" next to main_file.
    std::filesystem::path workers_dir;

    std::filesystem::path effective_workers_dir() const;
};

struct LoadedConfig {
    Config config;
    ConfigErrors errors;
    // Not empty: the text could not be checked at all (its helper ran out
    // of memory or time, services/config_check_helper.h); says why.
    std::string not_checked;
    bool ok() const { return errors.empty() && not_checked.empty(); }
};

// A missing main file is an error; a missing workers directory is not.
LoadedConfig load_config(const ConfigSource& source);

// Parses and validates a single document given as text (a main file), for
// `infervisorctl config check` over the socket.
// `options`: who checks (config_validator.h).
LoadedConfig load_config_text(std::string_view text, const std::string& name,
                              const ValidationOptions& options = {});

}  // namespace infervisor
