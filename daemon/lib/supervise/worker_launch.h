// How a WorkerSpec becomes a SpawnRequest: the user's identity looked up,
// and the worker's environment assembled.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "base/paths.h"
#include "base/result.h"
#include "cgroup/cgroup_limits.h"
#include "config/worker_spec.h"
#include "process/dynamic_users.h"
#include "process/spawn_request.h"

namespace infervisor {

struct WorkerIdentity {
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<gid_t> supplementary_groups;
    std::string user_name;  // USER=: the configured user, or the dynamic user's name
    std::string home;       // empty: the worker's work dir (dynamic users have no home)
    bool dynamic = false;   // a uid of the worker's own (user: dynamic)
};

// THE way to learn whom a worker runs as: launch, the checkpoint store and
// anything else that chowns a per-worker file or directory call this, never
// a user name of their own. `user: dynamic` gets the worker's own uid and a
// primary group of the same number from the DynamicUsers store under
// <state_dir>/dynamic-users (allocated on first use, then kept); any other
// user, group and the supplementary groups are looked up by name (NSS).
Result<WorkerIdentity> resolve_identity(const WorkerSpec& spec, const Paths& paths);

// The uid a worker has had without allocating one (for cleaning up after a
// removed worker); nullopt when unknown.
std::optional<uid_t> known_uid(const WorkerSpec& spec, const Paths& paths);

// The store of dynamic users under `paths`.
DynamicUsers dynamic_users(const Paths& paths);

struct WorkerPaths {
    std::filesystem::path notify_socket;
    std::filesystem::path workdir;
    std::filesystem::path tmpdir;
    std::filesystem::path checkpoint_dir;
    std::filesystem::path credentials_dir;              // empty: no CREDENTIALS_DIRECTORY
    std::optional<std::filesystem::path> restore_from;  // the newest complete checkpoint
};

// The complete environment: a minimal base (PATH, HOME, USER, LANG=C.UTF-8;
// HOME is the work dir for a dynamic user),
// the infervisor variables (NOTIFY_SOCKET, INFERVISOR_WORKER,
// INFERVISOR_WORKDIR, TMPDIR, INFERVISOR_CHECKPOINT_DIR, WATCHDOG_USEC,
// CREDENTIALS_DIRECTORY when the worker has credentials,
// INFERVISOR_RESTORE_FROM when there is a checkpoint), then
// the spec's own `environment`, which may override the base but not the
// infervisor variables.
// `assigned`: what the daemon gave this run (CUDA_VISIBLE_DEVICES for
// gpu.devices, gpu/gpu_assignment.h), set over the spec's own.
std::vector<std::string> worker_environment(
    const WorkerSpec& spec, const WorkerIdentity& who, const WorkerPaths& paths,
    const std::map<std::string, std::string>& assigned = {});

// The cgroup limits the spec asks for (memory.max, .high, .swap.max,
// pids.max, cpu.weight).
CgroupLimits limits_of(const WorkerSpec& spec);

}  // namespace infervisor
