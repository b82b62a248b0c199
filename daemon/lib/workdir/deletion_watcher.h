// DeletionWatcher: notices entries disappearing from protected directories.
//
// Watches the root of each protected directory (not its subtree) with
// inotify for IN_DELETE, IN_MOVED_FROM (an entry removed or moved away; not
// reported when the entry arrived in a watched directory in the same drain,
// i.e. a rename such as an atomic save),
// IN_DELETE_SELF and IN_MOVE_SELF (the directory itself). inotify does not say
// who did it: the worker deleting its own files produces the same events as
// a cleanup job, so the consumer decides what is worth logging.
//
// Contract: fd() is non-blocking and becomes readable when events are
// queued; the event loop waits on it and calls drain(), which returns all
// queued events and never blocks. A directory is watched through its open
// descriptor (/proc/self/fd/N), so the watch is on exactly the inode the
// daemon opened, whatever happens to the path.
//
// A removed directory: the kernel sends IN_DELETE_SELF only when the inode is
// finally released, i.e. after the last descriptor of it is closed. While the
// daemon holds the directory open (it does, for the lock), an rmdir of it
// produces no event here; it shows as was_removed(fd) becoming true (link
// count 0). Its entries' deletions, which an `rm -r` does first, are
// reported as usual. After dir_deleted the watch ends by itself.
#pragma once

#include <sys/inotify.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace infervisor {

// True when the directory `dir_fd` refers to has been removed (rmdir'ed).
bool was_removed(int dir_fd);

struct DeletionEvent {
    enum class Kind {
        entry_deleted,    // `entry` was unlinked or rmdir'ed inside `dir`
        entry_moved_out,  // `entry` was renamed away from `dir` (or within it)
        dir_deleted,      // `dir` itself was removed and released (see above)
        dir_moved,        // `dir` itself was renamed: its path no longer names it
        overflow,         // the kernel queue overflowed: events were lost
    };
    Kind kind;
    std::string owner;          // as given to watch(); empty for overflow
    std::filesystem::path dir;  // as given to watch(); empty for overflow
    std::string entry;          // name inside dir; empty for dir_* and overflow
    bool entry_is_dir = false;

    bool operator==(const DeletionEvent&) const = default;
};

class DeletionWatcher {
  public:
    // `procfs` is where /proc/self/fd lives (the real procfs is needed).
    static Result<DeletionWatcher> create(std::filesystem::path procfs = "/proc");

    int fd() const { return fd_.get(); }

    // Watches the directory `dir_fd` refers to on behalf of `owner` (a worker
    // name); `dir` is its path, reported back in events.
    Result<void> watch(const std::string& owner, const std::filesystem::path& dir, int dir_fd);
    // Stops every watch of `owner`.
    void unwatch(const std::string& owner);

    // Reads at most `max_reads` buffers of events (16 KiB each); more_pending()
    // then says whether it stopped before the queue was empty, so a caller on
    // an event loop can yield and come back instead of starving the loop while
    // a busy process keeps deleting.
    Result<std::vector<DeletionEvent>> drain(size_t max_reads = SIZE_MAX);
    bool more_pending() const { return more_pending_; }

  private:
    struct Target {
        std::string owner;
        std::filesystem::path dir;
    };

    DeletionWatcher(UniqueFd fd, std::filesystem::path procfs)
        : fd_(std::move(fd)), procfs_(std::move(procfs)) {}
    void translate(const struct inotify_event& ev, std::vector<DeletionEvent>& out,
                   std::vector<uint32_t>& cookies, std::set<uint32_t>& arrived);

    UniqueFd fd_;
    std::filesystem::path procfs_;
    bool more_pending_ = false;
    // One inotify watch per inode; several targets share it if they name the
    // same directory.
    std::map<int, std::vector<Target>> targets_;
};

}  // namespace infervisor
