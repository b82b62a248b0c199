// What a removed worker's dynamic uid (process/dynamic_users.h) may still
// own, and the cleanup before that uid may go to another worker (issue 26,
// defects 3 and 4).
//
// A uid is handed on only when nothing it owned is left: the next worker
// gets the lowest free uid, and with it whatever still carries the number
// (the old worker's checkpoints with its weights, KV cache and prompts; a
// file a re-added worker loads). So, when a removed worker's work dir is
// deleted (infervisorctl remove-workdir, remove_workdir_on_removal):
//  - its checkpoints (<state_dir>/checkpoints/NAME) are deleted;
//  - what the uid owns at the top of the shared temp and IPC dirs (/dev/shm,
//    /dev/mqueue, /tmp, /var/tmp) is deleted, and its SysV shared memory,
//    semaphores and message queues are removed, as systemd does for a
//    DynamicUser= (RemoveIPC=);
//  - the dirs it owned beyond its default work dir (a custom `workdir`, its
//    `extra_dirs`) are looked at: while one still exists and is the uid's,
//    the uid stays reserved (the dir is the administrator's to delete:
//    extra dirs hold downloads and are never deleted by the daemon).
// The daemon learns those dirs from the configuration and records them in
// <state_dir>/dynamic-user-dirs/NAME (root's, 0600: one "workdir PATH" or
// "extra PATH" line each), so that a daemon started after the worker was
// removed from the configuration still knows them.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include "base/paths.h"
#include "base/result.h"

namespace infervisor {

struct OwnedDirs {
    std::filesystem::path workdir;  // empty: the default one
    std::vector<std::filesystem::path> extra_dirs;
    bool operator==(const OwnedDirs&) const = default;
};

// Written atomically; only when it differs from what is recorded.
Result<void> record_owned_dirs(const Paths& paths, const std::string& worker,
                               const OwnedDirs& dirs);
// What is recorded; empty when nothing is (or the record is unreadable).
OwnedDirs recorded_owned_dirs(const Paths& paths, const std::string& worker);
void forget_owned_dirs(const Paths& paths, const std::string& worker);

struct UidCleanup {
    bool checkpoints_removed = false;  // there were some, and they are gone
    std::size_t temp_entries_removed = 0;
    std::size_t ipc_objects_removed = 0;
    // Recorded dirs that still exist and belong to the uid: it must stay
    // reserved while any is left.
    std::vector<std::filesystem::path> still_owned;
    std::vector<std::string> errors;  // what could not be cleaned
    bool uid_may_be_freed() const { return still_owned.empty() && errors.empty(); }
};

inline const std::vector<std::filesystem::path>& shared_temp_dirs() {
    static const std::vector<std::filesystem::path> dirs = {"/dev/shm", "/dev/mqueue", "/tmp",
                                                            "/var/tmp"};
    return dirs;
}

// Off the event loop (it walks directories). `temp_dirs`: where to delete
// the uid's top-level entries (tests pass their own); `sysv_ipc`: whether
// to remove the uid's SysV IPC objects (the host's; tests of the rest say
// false).
UidCleanup clean_up_after_uid(const Paths& paths, const std::string& worker, uid_t uid,
                              const OwnedDirs& owned,
                              const std::vector<std::filesystem::path>& temp_dirs, bool sysv_ipc);

}  // namespace infervisor
