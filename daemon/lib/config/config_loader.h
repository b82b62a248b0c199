// Loading the configuration: the main file, then every *.yaml in the workers
// directory in name order, parsed and validated as one.
//
// In two halves, so that a configuration read by someone else can be
// checked exactly as the daemon checks its own: read_config_texts() reads
// the files (`infervisorctl config check` does this with the caller's
// rights), load_config_texts() parses and validates the texts (the daemon's
// config-check helper does this with what the client sent). load_config() is
// both, for the daemon's own files.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "base/config_texts.h"
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

// Reads the main file and the drop-ins (*.yaml in name order, hidden files
// left out) within the limits of config_limits.h. A file that cannot be
// read, or would pass a limit, is an error in `errors` and left out; a
// missing main file is an error, a missing workers directory is not.
ConfigTexts read_config_texts(const ConfigSource& source, ConfigErrors& errors);
// The drop-in half of it: the *.yaml files of `dir`. `total`: the bytes
// read so far (the main file's), counted on against the limit of all files.
std::vector<ConfigText> read_dropin_texts(const std::filesystem::path& dir, ConfigErrors& errors,
                                          std::size_t& total);

// Parses and validates `texts` as one configuration. Texts given by a
// caller are held to the same limits as files (size of each and of all,
// number of drop-ins). `errors`: found before (reading the files); the
// result's errors start with them. `options`: who checks
// (config_validator.h).
LoadedConfig load_config_texts(const ConfigTexts& texts, const ValidationOptions& options = {},
                               ConfigErrors errors = {});

// Reads and loads source's files: read_config_texts then load_config_texts.
LoadedConfig load_config(const ConfigSource& source);

// One main file's text alone (no drop-ins): load_config_texts of it.
LoadedConfig load_config_text(std::string_view text, const std::string& name,
                              const ValidationOptions& options = {});

}  // namespace infervisor
