// Does the configuration fit the host? Two ways it cannot, said as
// warnings (not errors: the host may grow, overcommit can be deliberate) at
// --check-config, at start and on reload (in the journal and in the reply to
// `infervisorctl reload`):
// - the workers' memory.max add up to more than RAM + swap: the kernel
//   cannot hold every worker at its cap at once, and one worker growing
//   toward its cap can drive the host into a host-wide OOM kill before it
//   reaches it. Then only host rules act before the kernel.
// - a worker's memory.reserve is more than the host's RAM: it would wait
//   for room forever (issue 27, point 7).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "config/daemon_config.h"
#include "policy/stat_files.h"

namespace infervisor {

// "the memory.max of 2 workers add up to 900M, 120M more than this host's
// RAM + swap (780M): ...", "worker 'big': memory.reserve 800G can never fit
// on this host (RAM 23.5G): ..."; none when it fits, or when the host's size
// is unknown.
std::vector<std::string> host_fit_warnings(const Config& config, const MemInfo& host);

// The same for this host (/proc/meminfo under `procfs`).
std::vector<std::string> host_fit_warnings(const Config& config,
                                           const std::filesystem::path& procfs);

}  // namespace infervisor
