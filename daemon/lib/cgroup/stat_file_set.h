// StatFileSet: the statistics files of one directory (a worker's cgroup, or
// /proc), each opened once and read afresh with pread(2) from offset 0 at
// every sample.
//
// Why: a sample of a worker reads eleven cgroup files at every tick. Opening
// a kernfs file resolves its path and sets up a seq_file each time; under
// emulation (the VM) open+read+close of memory.current cost 87 us against
// 9.5 us for a pread on a held descriptor, 1.2 ms against 0.16 ms for a whole
// sample. Held descriptors make the idle daemon's sampling several times
// cheaper (issue 28: idle CPU beside earlyoom's).
//
// Contract: read() returns the file's whole current text (a kernfs or
// procfs file regenerates it on a read from offset 0), valid until the next
// read() on any set of this thread: the sets share one read buffer per
// thread, so a thousand workers' sets cost a thousand descriptors' entries,
// not a thousand buffers. A file is opened on its first read (openat on the
// directory's descriptor, O_NOFOLLOW) and held until close_all() or the
// set's end. A read that fails with ENODEV (the cgroup was removed and
// perhaps made again under the same path: a held descriptor never follows)
// or ESTALE reopens the directory and the file once. A file that cannot be
// opened fails with its errno (ENOENT: the controller is not enabled there;
// callers treat that as absent) and is tried again on the next read.
// Descriptors are held only below the process's soft RLIMIT_NOFILE minus
// kFdReserve: one opened above that is read and closed at once (the old
// cost), so held statistics files never take the descriptors that sockets,
// spawns and checkpoints need. (The daemon raises its soft limit at start,
// process/fd_limit.h: 1024 workers' files fit.) Not thread-safe: one owner
// (the event loop).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace infervisor {

// Descriptors below the soft limit that held statistics files leave free.
inline constexpr int kFdReserve = 256;

class StatFileSet {
  public:
    explicit StatFileSet(std::filesystem::path dir) : dir_(std::move(dir)) {}
    StatFileSet(StatFileSet&&) = default;
    StatFileSet& operator=(StatFileSet&&) = default;

    const std::filesystem::path& dir() const { return dir_; }

    // The whole text of `name` (a plain file name, or a relative path such as
    // "pressure/memory" under /proc), at most 1 MiB.
    Result<std::string_view> read(std::string_view name);

    // Closes every held descriptor (e.g. when the worker's run ends, so that
    // a removed cgroup is not kept alive by its open files).
    void close_all();

    size_t held() const;  // descriptors held now (tests, benchmarks)

  private:
    struct File {
        std::string name;
        UniqueFd fd;
    };

    File& entry(std::string_view name);
    Result<void> open_file(File& file);
    Result<std::string_view> read_held(File& file);
    // read_held, opening the file first when it is not held.
    Result<std::string_view> read_opening(File& file);

    std::filesystem::path dir_;
    UniqueFd dir_fd_;
    std::vector<File> files_;
};

}  // namespace infervisor
