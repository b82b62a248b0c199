// Helpers for the workdir tests: file metadata, ageing files for tmpfiles,
// running real programs.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/unique_fd.h"

namespace infervisor::testing {

// lstat() of `path`; fails the calling test (ADD_FAILURE) if it is missing.
struct stat lstat_of(const std::filesystem::path& path);
bool exists_nofollow(const std::filesystem::path& path);

// Sets atime and mtime of `path` and everything below it (never following
// symlinks) to `seconds_ago` in the past.
void make_old(const std::filesystem::path& path, long seconds_ago);

// Opens a directory O_RDONLY|O_DIRECTORY; aborts the test if that fails.
UniqueFd open_dir(const std::filesystem::path& path);

struct ProgramRun {
    int exit_status = -1;  // -1: did not exit normally
    std::string output;    // stdout and stderr together
};
ProgramRun run_program(const std::vector<std::string>& argv);

// The systemd-tmpfiles binary ($INFERVISOR_SYSTEMD_TMPFILES, else the usual
// places), or nullopt when it is not installed.
std::optional<std::filesystem::path> find_systemd_tmpfiles();

bool running_as_root();

// Runs `body` in a forked child inside a private mount namespace (its mounts
// vanish with it) and returns what body returned; kCannotMount when the
// namespace cannot be made here (body may return it too, when its own mount
// fails); -1 when the child did not exit normally.
inline constexpr int kCannotMount = 77;
int run_in_mount_namespace(const std::function<int()>& body);

}  // namespace infervisor::testing
