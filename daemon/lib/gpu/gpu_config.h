// The worker's `gpu:` key (gpu/gpu_spec.h), read strictly as every other
// worker key (yaml/yaml_map.h). `gpu: none` drops one given by `defaults:`.
#pragma once

#include <optional>

#include "gpu/gpu_spec.h"
#include "yaml/yaml_map.h"

namespace infervisor {

// At most this many devices per worker (a host has at most 16 or so).
inline constexpr std::size_t kMaxGpuDevices = 64;

void parse_gpu_keys(YamlMap& worker, std::optional<GpuSpec>& spec, ConfigErrors& errors);

}  // namespace infervisor
