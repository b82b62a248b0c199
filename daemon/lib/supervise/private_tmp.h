// Whether a worker gets a private /tmp and /var/tmp (WorkerSpec::private_tmp,
// on by default; the mount namespace itself is set up in the child, see
// SpawnRequest::private_tmp_fd).
//
// A private /tmp hides the host's /tmp from the worker. A work dir or extra
// dir that the configuration places under /tmp or /var/tmp would then be out
// of the worker's sight, so such a worker shares the host's /tmp instead;
// the dirs it names there are protected as configured (lock + tmpfiles
// exclusion) either way.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "base/paths.h"
#include "config/worker_spec.h"
#include "workdir/workdir_spec.h"

namespace infervisor {

// Empty when the worker can have its private /tmp; else why not, naming the
// dir ("its work dir /tmp/llama is under /tmp").
std::optional<std::string> why_no_private_tmp(const std::filesystem::path& workdir,
                                              const WorkDirSpec& spec);

// Whether the worker's runs see the host's /tmp, by the rule Worker::spawn
// applies: private_tmp false, a criu worker, or a dir under /tmp or /var/tmp
// (why_no_private_tmp). For SharedTmpGuard, which scans only such workers
// (and checks each process's mount namespace besides).
bool shares_host_tmp(const WorkerSpec& spec, const Paths& paths);

}  // namespace infervisor
