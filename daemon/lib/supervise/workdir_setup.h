// The checkpoint directory of a worker (its work dir and TMPDIR come from
// workdir/WorkDirManager).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>

#include "base/paths.h"
#include "base/result.h"

namespace infervisor {

// <state_dir>/checkpoints/NAME, mode 0700, owned by the worker; created
// without following links from a root-owned parent, kept across restarts.
Result<std::filesystem::path> prepare_checkpoint_dir(const Paths& paths, const std::string& name,
                                                     uid_t uid, gid_t gid);

}  // namespace infervisor
