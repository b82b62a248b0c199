// Which files under the host's /tmp and /var/tmp a worker holds open or
// mapped, read from /proc (PID/fd/* links and PID/maps) of each of its
// processes: what a worker that shares the host's /tmp (private_tmp: false)
// could lose to systemd-tmpfiles aging while it runs (tmp_file_protection.h).
//
// The worker is hostile, so the scan only ever reads /proc: readlink() of
// PID/fd/N and PID/ns/mnt, read() of PID/maps; it never opens, stats or
// follows a path the worker named. Every loop is capped (ScanLimits): pids,
// fd entries, maps bytes and paths kept, so that a worker with a million fds
// or mappings costs the daemon at most the caps. A pid that exits during the
// scan is skipped (its entries vanish: ENOENT/ESRCH). Processes in another
// mount namespace than the daemon's are skipped: their /tmp is not the one
// the daemon sees, and the paths they show would name other files.
//
// Kept: absolute paths strictly below /tmp or /var/tmp (not those dirs
// themselves: an x line for /tmp would stop all of its aging), with no
// "." or ".." component, not marked " (deleted)" (an unlinked file needs no
// protection; a name that really ends so is skipped with it). Mapped paths
// come from maps, where the kernel writes a newline in a name as "\012":
// decoded back.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace infervisor {

struct ScanLimits {
    size_t max_pids = 64;                     // processes of one worker looked at
    size_t max_fds = 1024;                    // fd links read, over all its processes
    size_t max_maps_bytes = 4 * 1024 * 1024;  // of PID/maps read, over all its processes
    size_t max_paths = 128;                   // distinct paths kept
};

// How a file was found: held open (an fd) or mapped (maps); the first pid
// seen with it.
struct OpenTmpFile {
    pid_t pid = 0;
    bool mapped = false;  // false: an fd
};

struct OpenTmpFileScan {
    std::map<std::string, OpenTmpFile> files;  // by path
    size_t pids = 0;                           // looked at
    size_t pids_elsewhere = 0;                 // skipped: another mount namespace (or gone)
    size_t fds = 0;                            // fd links read
    size_t maps_bytes = 0;                     // maps bytes read
    bool truncated = false;                    // a cap cut the scan short
};

// `path` as kept (see above), or nullopt. `target` is a readlink() result
// or a decoded maps path.
std::optional<std::string> shared_tmp_path(std::string_view target);

// The path of one line of /proc/PID/maps (without its newline), decoded;
// nullopt for anonymous and special mappings ([heap], [vdso], ...).
std::optional<std::string> maps_line_path(std::string_view line);

// The link text of <procfs>/self/ns/mnt ("mnt:[4026531841]"), empty if it
// cannot be read.
std::string own_mount_namespace(const std::filesystem::path& procfs);

// Scans `pids` under `procfs` (normally /proc). Only processes whose
// PID/ns/mnt reads `mount_ns` are looked at.
OpenTmpFileScan scan_open_tmp_files(const std::filesystem::path& procfs,
                                    const std::vector<pid_t>& pids, const std::string& mount_ns,
                                    const ScanLimits& limits = {});

}  // namespace infervisor
