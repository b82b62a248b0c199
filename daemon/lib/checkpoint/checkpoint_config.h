// Reading a worker's checkpoint settings from its configuration mapping:
//
//   checkpoint:
//     method: criu        # cooperative (default), criu or llama-server
//     signal: SIGUSR1     # default SIGUSR1
//     timeout: 2m         # wait this long for CHECKPOINT=1; default 2m
//     interval: 10m       # periodic checkpoints; default 0 (none)
//     keep: 2             # complete checkpoints kept, 1..100; default 2
//     quota: 25%          # all its checkpoints together: 1%..100% of the
//                         # checkpoint file system, or a size (20G); default 25%
//     max_age: 7d         # older complete ones are deleted (never the
//                         # newest); default 0 (by count and quota only)
//
// Contract: claims exactly the key `checkpoint` from the worker's (or the
// defaults') YamlMap and reports every bad value where it stands in the file.
#pragma once

#include "checkpoint/checkpoint_spec.h"
#include "yaml/config_errors.h"
#include "yaml/yaml_map.h"

namespace infervisor {

void parse_checkpoint_keys(YamlMap& worker, CheckpointSpec& spec, ConfigErrors& errors);

}  // namespace infervisor
