// WorkDirManager: the private directories of all configured workers.
//
// For each worker it creates (or re-checks) the work dir, owned by the
// worker's user with mode 0700, and the private TMPDIR inside it
// (<workdir>/tmp, 0700), plus the configured extra dirs; it keeps the work dir
// and every protected extra dir locked against systemd-tmpfiles aging
// (DirLock) and listed in <tmpfiles_dir>/infervisor-workdirs.conf (x lines) for as long
// as the worker is prepared. All path handling follows safe_path.h and
// owned_dir.h: nothing is followed through a symlink a worker could plant.
//
// Lifecycle, as the supervisor drives it:
//   start-up:         write_tmpfiles_exclusions()  (clears a stale file)
//   before each start: prepare(spec, uid, gid)     (idempotent; contents kept)
//   worker removed:   release(name), then, if spec.remove_on_removal and the
//                     worker no longer runs, remove_workdir(spec, uid)
// A restart needs no release: prepare() again simply re-checks everything.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/paths.h"
#include "base/result.h"
#include "base/unique_fd.h"
#include "workdir/dir_lock.h"
#include "workdir/workdir_spec.h"

namespace infervisor {

struct PreparedDir {
    std::filesystem::path path;
    UniqueFd fd;   // O_RDONLY|O_DIRECTORY: for measure_usage, DeletionWatcher::watch
    DirLock lock;  // held when protected
    bool is_protected() const { return lock.held(); }
};

struct PreparedWorkDir {
    WorkDirSpec spec;
    uid_t uid = 0;
    gid_t gid = 0;
    PreparedDir workdir;
    std::filesystem::path tmpdir;
    std::vector<PreparedDir> extra_dirs;
};

// What a worker is told (INFERVISOR_WORKDIR, TMPDIR) and shown.
struct WorkDirLayout {
    std::filesystem::path workdir;
    std::filesystem::path tmpdir;
    std::vector<std::filesystem::path> extra_dirs;

    bool operator==(const WorkDirLayout&) const = default;
};

class WorkDirManager {
  public:
    explicit WorkDirManager(Paths paths) : paths_(std::move(paths)) {}

    // Creates or re-checks the worker's directories, takes their locks and
    // rewrites the exclusion file if the protected set changed. On failure
    // nothing of this worker's previous preparation is lost (a worker already
    // prepared stays prepared as before). An error whose code is EWOULDBLOCK
    // means someone else holds an exclusive lock on one of the directories
    // (systemd-tmpfiles cleaning it, or any user who can open it; the message
    // names the holder): not the worker's failure; retry later.
    Result<WorkDirLayout> prepare(const WorkDirSpec& spec, uid_t uid, gid_t gid);

    // Drops the worker's locks and its x lines (rewriting the file). Files are
    // left alone. The returned error only concerns the exclusion file.
    Result<void> release(const std::string& worker);

    // Deletes the worker's work dir recursively (remove_workdir_tree). Extra
    // dirs are kept. Refused while the worker is prepared; the caller must
    // also make sure it is not running. `uid` is the worker's user, as in
    // prepare(), for the ancestor checks of a custom work dir.
    Result<void> remove_workdir(const WorkDirSpec& spec, uid_t uid) const;

    // Rewrites the exclusion file from the current set (removes it when empty).
    Result<void> write_tmpfiles_exclusions();

    // Called with the worker's name after each successful prepare() and each
    // release() of a prepared worker, so that watchers follow the directories
    // (WorkDirMonitor). One listener; empty: none.
    void set_change_listener(std::function<void(const std::string&)> listener) {
        on_change_ = std::move(listener);
    }

    const PreparedWorkDir* find(const std::string& worker) const;
    std::vector<std::string> prepared_workers() const;
    // Every directory currently protected, for all workers.
    std::set<std::filesystem::path> protected_paths() const;

  private:
    Result<PreparedWorkDir> prepare_dirs(const WorkDirSpec& spec, uid_t uid, gid_t gid) const;
    Result<void> rewrite_if_changed(const std::set<std::filesystem::path>& paths);

    Paths paths_;
    std::map<std::string, PreparedWorkDir> prepared_;
    std::optional<std::set<std::filesystem::path>> written_;  // last content of the file
    std::function<void(const std::string&)> on_change_;
};

// The removal part of WorkDirManager::remove_workdir, without its "not
// prepared" check, so that it can run off the event loop: it touches no
// manager state. The caller checks that the worker is neither prepared nor
// running, and keeps it so until this returns.
Result<void> remove_unprepared_workdir(const WorkDirSpec& spec, uid_t uid, const Paths& paths);

}  // namespace infervisor
