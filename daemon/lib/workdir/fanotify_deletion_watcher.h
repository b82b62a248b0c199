// FanotifyDeletionWatcher: entries disappearing from protected directories,
// with the process that removed them.
//
// Why fanotify and not only inotify (deletion_watcher.h): the issue asks that
// deletions "by someone else" be logged, and inotify cannot say who. A
// fanotify group reporting directory file handles and names
// (FAN_REPORT_DFID_NAME, kernel >= 5.9; needs CAP_SYS_ADMIN, which the daemon
// has) delivers FAN_DELETE and FAN_RENAME (FAN_MOVED_FROM before 5.17) for the entries of a marked
// directory with the pid of the process that did it; the caller then tells
// the worker's own deletions (a process in its cgroup) from the rest.
//
// Limits, stated so callers can handle them:
//  - Not every file system can report file handles: overlayfs before 6.6
//    (so the VM's /var/lib), 9p, some FUSE file systems. watch() then fails
//    (EOPNOTSUPP, EXDEV, ENODEV) and the caller watches that directory with
//    DeletionWatcher instead, which reports the same events without a pid.
//  - The pid is the deleter's at the time of the deletion; a short-lived
//    process (`rm`) may be gone by the time it is looked up, and a pid can in
//    principle be reused in between.
//  - Like DeletionWatcher, only the entries directly in the directory are
//    reported (an inode mark, not a subtree or file-system mark).
//
// Contract: fd() is non-blocking and readable when events are queued;
// drain() returns them all and never blocks. A directory is identified by its
// file system id and file handle, taken from the descriptor given to watch(),
// so events are matched to exactly the inode the daemon opened. The watcher
// keeps its own duplicate of that descriptor (the mark is removed through it).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "workdir/deletion_watcher.h"

namespace infervisor {

struct DeletionReport {
    // entry_deleted, entry_moved_out, or overflow (events were lost).
    DeletionEvent event;
    pid_t pid = 0;  // the thread group that deleted it; 0 when not known
};

class FanotifyDeletionWatcher {
  public:
    // Fails where fanotify cannot report directory entries with pids (kernel
    // before 5.9; no CAP_SYS_ADMIN in the effective set, e.g. a unit whose
    // CapabilityBoundingSet lacks it): the caller uses DeletionWatcher.
    static Result<FanotifyDeletionWatcher> create();

    int fd() const { return fd_.get(); }

    // Marks the directory `dir_fd` refers to for `owner`; `dir` is its path,
    // reported back in events. See above for the file systems where it fails.
    Result<void> watch(const std::string& owner, const std::filesystem::path& dir, int dir_fd);
    // Removes every mark of `owner`.
    void unwatch(const std::string& owner);
    bool watches(const std::string& owner) const;

    // As DeletionWatcher::drain(): at most `max_reads` buffers, then
    // more_pending() says whether events were left for the next call.
    Result<std::vector<DeletionReport>> drain(size_t max_reads = SIZE_MAX);
    bool more_pending() const { return more_pending_; }

  private:
    struct Target {
        std::string owner;
        std::filesystem::path dir;
        UniqueFd fd;
        std::string key;  // fsid + handle type + handle bytes
    };

    explicit FanotifyDeletionWatcher(UniqueFd fd) : fd_(std::move(fd)) {}
    void translate(const char* event, size_t len, std::vector<DeletionReport>& out) const;
    bool is_watched(const std::string& key) const;

    UniqueFd fd_;
    std::vector<Target> targets_;
    bool more_pending_ = false;
    uint64_t mask_ = 0;  // chosen at the first watch(): FAN_RENAME where the kernel has it
};

}  // namespace infervisor
