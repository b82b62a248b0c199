// Cross-field and cross-file checks on a parsed Config: what each field alone
// cannot say (memory.high above memory.max, duplicate worker names, a user
// that does not exist on this host, ...). Problems are reported at the
// worker's definition.
#pragma once

#include <vector>

#include "config/daemon_config.h"
#include "gpu/gpu_snapshot.h"
#include "yaml/config_errors.h"

namespace infervisor {

struct ValidationOptions {
    // Who runs the check. false: the daemon itself (as root), loading its
    // own files. true: a helper with the rights of the unprivileged user who
    // asked (`infervisorctl config check`); the paths of the text are
    // looked at with those rights only (credential_checks.h).
    bool as_caller = false;
    // The host's GPUs, when known: a worker's gpu.devices naming one it lacks
    // is a warning (the file may be checked on a build host; the start is
    // what fails, gpu/gpu_assignment.h). Null: not looked at.
    const std::vector<GpuDevice>* host_gpus = nullptr;
};

void validate_config(const Config& config, ConfigErrors& errors,
                     const ValidationOptions& options = {});

// Worker names become cgroup and file names: 1-64 of [A-Za-z0-9_.-], not
// starting with '.' or '-', and not starting with a cgroup controller prefix
// ("memory.max" would name the parent's interface file, not a new cgroup).
bool is_valid_worker_name(const std::string& name);
// True for names like "memory.max" or "cgroup.procs": a cgroup's own files.
bool is_cgroup_interface_name(const std::string& name);

}  // namespace infervisor
