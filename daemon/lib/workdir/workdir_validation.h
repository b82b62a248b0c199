// Checks of worker directory paths: each path on its own, and all workers'
// directories together.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "base/paths.h"
#include "base/result.h"
#include "workdir/workdir_spec.h"
#include "yaml/config_errors.h"

namespace infervisor {

// A directory path a worker may be given: absolute; no "." or ".."
// components; not "/"; not under /proc, /sys or /dev; not a system directory
// (/etc, /usr, /tmp, /var/tmp, ...) or a parent of one; writable on a tmpfiles
// line (no whitespace, quotes, backslash, '%', glob characters). Returns the
// normalized path (no trailing or doubled slashes).
Result<std::filesystem::path> check_worker_dir_path(const std::string& text);

// True when `inner` is `outer` or lies below it (component-wise, lexically;
// both normalized).
bool is_within(const std::filesystem::path& inner, const std::filesystem::path& outer);

// Across all workers: no directory shared between two workers or nested in
// another worker's; no worker directory at or above the daemon's own
// directories (paths); worker names usable as a directory name; within one
// worker, no path given twice. Problems are reported unplaced, naming the
// workers and paths.
void validate_workdir_specs(const std::vector<WorkDirSpec>& specs, const Paths& paths,
                            ConfigErrors& errors);

}  // namespace infervisor
