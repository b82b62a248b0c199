// WorkDirSpec: what the configuration says about one worker's directories.
// Plain data, parsed by parse_workdir_keys() and checked by
// validate_workdir_specs(); equality decides on reload whether it changed.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include "base/paths.h"
#include "base/units.h"

namespace infervisor {

// A further directory the worker gets (model cache, scratch space), e.g. under
// /var/tmp. Owned by the worker's user like the work dir.
struct ExtraDirSpec {
    std::filesystem::path path;  // absolute, normalized
    mode_t mode = 0700;
    // Protected from systemd-tmpfiles aging (lock + x line) while configured.
    bool protect = true;
    // The directory may exist already, made by someone other than the daemon
    // (e.g. a model cache the operator prepared): it is handed to the worker
    // all the same. Without it an existing directory the daemon did not
    // create is refused (owned_dir.h).
    bool adopt = false;

    bool operator==(const ExtraDirSpec&) const = default;
};

struct WorkDirSpec {
    std::string worker;             // the worker's name
    std::filesystem::path workdir;  // empty: <state_dir>/workers/<worker>
    bool adopt_workdir = false;     // as ExtraDirSpec::adopt, for a configured workdir
    std::vector<ExtraDirSpec> extra_dirs;
    ByteLimit quota;  // nullopt: no quota
    // Delete the work dir when the worker is removed from the configuration.
    // Default: keep it. Extra dirs are never deleted (they are named by the
    // administrator and may hold expensive downloads).
    bool remove_on_removal = false;

    bool operator==(const WorkDirSpec&) const = default;
};

// The work dir a spec means: its own path, or the default one.
std::filesystem::path resolve_workdir(const WorkDirSpec& spec, const Paths& paths);

// The private TMPDIR inside a work dir.
inline constexpr char kWorkerTmpDirName[] = "tmp";

}  // namespace infervisor
