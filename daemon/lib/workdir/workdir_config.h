// Reading a worker's directory settings from its configuration mapping:
//
//   workdir: /var/lib/models/llama     # optional; default <state_dir>/workers/NAME
//   extra_dirs:
//     - path: /var/tmp/llama-cache
//       mode: "0750"                   # octal; default 0700
//       protect: true                  # default true
//   workdir_quota: 20G                 # optional; "max" = none
//   remove_workdir_on_removal: false   # default false
//
// Contract: parse_workdir_keys() claims exactly these keys from the worker's
// YamlMap (so the caller's finish() still reports the rest) and checks each
// path's shape where it stands in the file (check_worker_dir_path, in
// workdir_validation.h). Checks that need every worker, and the resolved
// default work dir, are in validate_workdir_specs().
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

#include "base/result.h"
#include "workdir/workdir_spec.h"
#include "yaml/config_errors.h"
#include "yaml/yaml_map.h"

namespace infervisor {

// Extra dirs of one worker; a longer list is an error at the list.
inline constexpr std::size_t kMaxExtraDirs = 64;

// `spec.worker` is left as it is: the caller sets the name.
void parse_workdir_keys(YamlMap& worker, WorkDirSpec& spec, ConfigErrors& errors);

// "0700", "700", "02770": octal permission bits; set-user-ID is refused.
Result<mode_t> parse_dir_mode(const std::string& text);

}  // namespace infervisor
