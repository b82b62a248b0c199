// The directories a worker is given: its private work dir with TMPDIR inside,
// and its checkpoint dir.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>

#include "base/paths.h"
#include "base/result.h"

namespace infervisor {

struct WorkerDirs {
    std::filesystem::path workdir;         // <state_dir>/workers/NAME, 0700, owned by the worker
    std::filesystem::path tmpdir;          // <workdir>/tmp
    std::filesystem::path checkpoint_dir;  // <state_dir>/checkpoints/NAME
};

Result<WorkerDirs> prepare_worker_dirs(const Paths& paths, const std::string& name, uid_t uid, gid_t gid);

}  // namespace infervisor
