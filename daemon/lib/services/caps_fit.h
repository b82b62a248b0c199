// Do the configured caps fit the host? When the workers' memory.max add up
// to more than RAM + swap, the kernel cannot hold every worker at its cap at
// once: one worker growing toward its cap can drive the host into a
// host-wide OOM kill before it reaches the cap. Then only host rules act
// before the kernel. infervisord says so at --check-config, at start and on
// reload (a warning, not an error: overcommit can be deliberate).
#pragma once

#include <optional>
#include <string>

#include "config/daemon_config.h"
#include "policy/stat_files.h"

namespace infervisor {

// "the memory.max of 2 workers add up to 900.0M, 120.0M more than this
// host's RAM + swap (780.0M): ..."; empty when they fit, or when the host's
// size is unknown.
std::optional<std::string> caps_overcommit_warning(const Config& config, const MemInfo& host);

// The same for this host (/proc/meminfo under `procfs`).
std::optional<std::string> caps_overcommit_warning(const Config& config,
                                                   const std::filesystem::path& procfs);

}  // namespace infervisor
