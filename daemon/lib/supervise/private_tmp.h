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

#include "workdir/workdir_spec.h"

namespace infervisor {

// Empty when the worker can have its private /tmp; else why not, naming the
// dir ("its work dir /tmp/llama is under /tmp").
std::optional<std::string> why_no_private_tmp(const std::filesystem::path& workdir,
                                              const WorkDirSpec& spec);

}  // namespace infervisor
