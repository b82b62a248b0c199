// CheckpointStore: the checkpoints of one worker, <state_dir>/checkpoints/NAME.
//
//   checkpoints/            root, 0711
//   └── NAME/               root, 0711: only the daemon adds, renames, removes
//       ├── staging/        the worker's, 0700: $INFERVISOR_CHECKPOINT_DIR
//       ├── incoming/       a finished staging dir being sealed and judged
//       ├── 0000000007/     a complete checkpoint (a former staging dir)
//       ├── 0000000007.info its numbers (bytes=, seconds=), written by the daemon
//       ├── 0000000008/     the newest: $INFERVISOR_RESTORE_FROM on the next start
//       └── trash/          root, 0700: retired checkpoints, removed off the loop
//
// Contract:
//  - A checkpoint is complete when, and only when, the daemon has renamed it
//    to the next sequence number. On CHECKPOINT=1 (or criu's end) staging/
//    becomes incoming/ (take_staging), is sealed (checkpoint_seal.h: root's,
//    readable by the worker), measured and judged against the quota, and only
//    then published (incoming/ to the number) or discarded (to the trash): an
//    over-quota checkpoint is never the newest, not even for a moment.
//    rename(2) is atomic: a crash leaves staging/, incoming/ or the numbered
//    dir, never half of one. Neither staging/ nor incoming/ is ever offered:
//    every run starts with a fresh, empty staging dir and no incoming/ (the
//    last run's go to the trash), so a checkpoint the worker was writing, or
//    the daemon judging, when it died is dropped.
//  - The worker owns what is inside staging/ (it may corrupt its own
//    checkpoint; that harms only itself); a sealed checkpoint is root's, the
//    worker may only read it; NAME is root's: the worker cannot plant, swap
//    or rename entries there. The daemon (root) opens
//    everything with openat(O_NOFOLLOW) below a descriptor of NAME, never
//    reads the worker's files, and walks the worker's trees only with
//    measure_usage and remove_workdir_tree (no symlink followed, no mount
//    crossed), and those only off the event loop: every member here is O(1)
//    system calls except the static empty_trash(), measure(),
//    measure_incoming() and seal_incoming(), which are blocking.
//  - Retention keeps the newest `keep` complete checkpoints within `max_age`
//    and the quota (checkpoint_retention.h); supervise/ decides, retire()
//    carries it out.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "workdir/disk_usage.h"

namespace infervisor {

inline constexpr char kCheckpointStagingName[] = "staging";
inline constexpr char kCheckpointIncomingName[] = "incoming";
inline constexpr char kCheckpointTrashName[] = "trash";
// More entries than this in NAME is refused (only an old layout, where the
// worker owned NAME, could get there).
inline constexpr size_t kMaxCheckpointDirEntries = 1024;

struct StoredCheckpoint {
    uint64_t sequence = 0;
    std::filesystem::path path;  // NAME/<sequence, 10 digits>

    bool operator==(const StoredCheckpoint&) const = default;
};

// The numbers the daemon recorded when it published a checkpoint.
struct CheckpointInfo {
    uint64_t bytes = 0;
    // From the checkpoint request to CHECKPOINT=1; empty when the worker
    // checkpointed on its own.
    std::optional<double> seconds;
    // When the info was written (its mtime; only the daemon writes it, just
    // after publishing), Unix seconds: a checkpoint's age for `max_age`.
    // The numbered dir's own times are the worker's to change.
    std::optional<int64_t> written_at;
};

class CheckpointStore {
  public:
    // Opens <checkpoints_root>/<name>, creating both (root-owned, 0711) and
    // taking NAME over from the worker where an earlier version gave it to
    // it; lists the complete checkpoints.
    static Result<CheckpointStore> open(const std::filesystem::path& checkpoints_root,
                                        const std::string& name);
    // As open(), but only where <checkpoints_root>/<name> exists: reading a
    // worker's checkpoints creates nothing. nullopt: it has none.
    static Result<std::optional<CheckpointStore>> open_existing(
        const std::filesystem::path& checkpoints_root, const std::string& name);

    const std::filesystem::path& path() const { return path_; }
    std::filesystem::path staging_path() const { return path_ / kCheckpointStagingName; }
    // Complete checkpoints, oldest first.
    const std::vector<StoredCheckpoint>& complete() const { return complete_; }
    std::optional<StoredCheckpoint> newest() const;
    // The complete checkpoint whose directory name is exactly `id`
    // ("0000000007"), else nullopt. `id` comes from a caller: it is only
    // compared with the names of the listed checkpoints, never made a path.
    std::optional<StoredCheckpoint> find(std::string_view id) const;

    // A fresh, empty staging dir owned by uid:gid, mode 0700; whatever was
    // there before goes to the trash. Call before each run.
    Result<std::filesystem::path> fresh_staging(uid_t uid, gid_t gid);
    // The worker (or criu) is done: staging/ becomes incoming/, to be sealed,
    // measured and judged before it is published. Refused when staging is
    // missing, not a directory, or empty (nothing was written), or when
    // incoming/ is taken (one at a time). The caller then calls
    // fresh_staging() for the next one.
    Result<void> take_staging();
    // Publishes incoming/ as the next complete checkpoint.
    Result<StoredCheckpoint> publish();
    // Moves incoming/ to the trash (judged out, or left by a daemon that
    // died while judging it); no error when there is none.
    Result<void> discard_incoming();
    // Moves complete checkpoint `sequence` (and its info) to the trash; no
    // error when it is not there (retired already).
    Result<void> retire(uint64_t sequence);

    // True after open() (an earlier run may have left trash) and whenever
    // something went to the trash since the last take_trash_flag().
    bool take_trash_flag() { return std::exchange(trash_flag_, false); }

    // A descriptor of NAME for blocking work on another thread.
    Result<UniqueFd> dup_dir() const;

    // Blocking: hands incoming/ below `dir_fd` (a descriptor of NAME) to root,
    // readable by `reader` (checkpoint_seal.h); `writer` wrote it.
    static Result<void> seal_incoming(int dir_fd, uid_t writer, uid_t reader);
    // Blocking: the allocated bytes of incoming/ below `dir_fd`.
    static Result<TreeUsage> measure_incoming(int dir_fd);
    // Blocking: the allocated bytes of checkpoint `sequence` (see
    // measure_usage: a lower bound when the tree is too big to measure
    // whole), below `dir_fd` (a descriptor of NAME).
    static Result<TreeUsage> measure(int dir_fd, uint64_t sequence);
    // The size of the file system that holds `dir_fd`, in bytes.
    static Result<uint64_t> filesystem_bytes(int dir_fd);
    // Blocking: removes everything in NAME/trash.
    static Result<void> empty_trash(int dir_fd);
    // Writes / reads NAME/<sequence>.info (daemon-written, root-owned).
    static Result<void> write_info(int dir_fd, uint64_t sequence, const CheckpointInfo& info);
    static std::optional<CheckpointInfo> read_info(int dir_fd, uint64_t sequence);
    // When checkpoint `sequence` was published, Unix seconds: its info's
    // time, else (no info: an older version's) its directory's ctime, which
    // the publishing rename set.
    static std::optional<int64_t> published_at(int dir_fd, uint64_t sequence);

    // "0000000042".
    static std::string sequence_name(uint64_t sequence);

  private:
    CheckpointStore(UniqueFd fd, std::filesystem::path path)
        : fd_(std::move(fd)), path_(std::move(path)) {}
    Result<void> list();
    Result<void> to_trash(const std::string& name);

    UniqueFd fd_;  // NAME, O_RDONLY|O_DIRECTORY
    std::filesystem::path path_;
    std::vector<StoredCheckpoint> complete_;
    uint64_t trash_counter_ = 0;
    bool trash_flag_ = true;
};

}  // namespace infervisor
