// check_config_in_helper: `infervisorctl config check` texts checked in a
// helper process (process/helper_process.h) with the caller's rights.
//
// Why not in the daemon (issue 26, defects 6 and 7): any local user may ask
// for a check. Done in the daemon's threads, a hostile text (1 MiB, 50,000
// extra dirs) left ~80 MB per check mapped and, the daemon being
// mlockall'd, locked, for good; and the credential paths of the text were
// stat()ed as root, telling any user whether a file in /root exists. In a
// helper the memory is the helper's (capped by kMemoryLimit, gone when it
// exits; the daemon keeps only the reply, at most kMaxReply bytes) and the
// paths are looked at with the caller's uid, gid and groups.
//
// Blocking (it waits for the helper): call it from a background thread,
// e.g. a ConfigLoadRunner job.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/config_loader.h"
#include "gpu/gpu_snapshot.h"
#include "process/helper_process.h"

namespace infervisor {

struct ConfigCheckHelper {
    // The hostile worst case within the limits of config_limits.h (1 MiB,
    // 50,000 extra dirs) needs about 90 MiB of address space (measured).
    static constexpr std::uint64_t kMemoryLimit = std::uint64_t{256} << 20;
    static constexpr std::size_t kMaxReply = std::size_t{1} << 20;

    std::string program = kSelfExe;  // an infervisord binary (tests: the built one)
    std::uint64_t memory_limit = kMemoryLimit;
    Duration deadline = std::chrono::seconds(10);
    // The helper's whole environment (the daemon passes on
    // SYSTEMD_BYPASS_USERDB, so the helper's NSS lookups do not ask the
    // daemon's own userdb server).
    std::vector<std::string> environment;
};

// The result's `errors` are the verdict; `not_checked` says why there is
// none (the helper ran out of memory or time, or did not start). `config`
// stays empty: the caller needs only the verdict.
// `gpus`: the daemon's GPUs, for the check of gpu.devices (nullopt: not
// known, not checked).
LoadedConfig check_config_in_helper(const ConfigTexts& texts, const HelperIdentity& caller,
                                    const ConfigCheckHelper& helper,
                                    std::optional<std::vector<GpuDevice>> gpus = std::nullopt);

}  // namespace infervisor
