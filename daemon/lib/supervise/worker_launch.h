// How a WorkerSpec becomes a SpawnRequest: the user's identity looked up,
// and the worker's environment assembled.
#pragma once

#include <filesystem>
#include <string>

#include "base/result.h"
#include "config/worker_spec.h"
#include "process/spawn_request.h"

namespace infervisor {

struct WorkerIdentity {
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<gid_t> supplementary_groups;
    std::string home = "/";
};

// Resolves user, group and supplementary groups by name (NSS).
Result<WorkerIdentity> resolve_identity(const WorkerSpec& spec);

struct WorkerPaths {
    std::filesystem::path notify_socket;
    std::filesystem::path workdir;
    std::filesystem::path tmpdir;
    std::filesystem::path checkpoint_dir;
};

// The complete environment: a minimal base (PATH, HOME, USER, LANG=C.UTF-8),
// the infervisor variables (NOTIFY_SOCKET, INFERVISOR_WORKER,
// INFERVISOR_WORKDIR, TMPDIR, INFERVISOR_CHECKPOINT_DIR, WATCHDOG_USEC), then
// the spec's own `environment`, which may override the base but not the
// infervisor variables.
std::vector<std::string> worker_environment(const WorkerSpec& spec, const WorkerIdentity& who,
                                            const WorkerPaths& paths);

}  // namespace infervisor
