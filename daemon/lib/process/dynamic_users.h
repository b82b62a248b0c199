// DynamicUsers: a uid of its own for each worker, as systemd's DynamicUser=
// gives one to each service, so that the kernel keeps workers apart (files,
// /proc/PID/environ, signals, ptrace) without an account per worker.
//
// Contract:
//  - A worker name maps to one uid from a reserved range; its primary group
//    is the gid of the same number. The range (kDynamicUidFirst..Last) lies
//    in what systemd documents as unused (60578-61183, between the uids
//    nspawn maps host users to and systemd's own DynamicUser range
//    61184-65519), below 65536 so 16-bit tools and file systems cope, and
//    apart from regular users (1000-60000). A number that NSS knows as a
//    user or a group is skipped.
//  - The mapping is persisted, one file per worker (<dir>/NAME holding the
//    uid), written atomically under a root-only directory, so a worker keeps
//    its uid across its restarts and the daemon's: its work dir stays its own.
//  - A uid is freed only by release(), which the daemon calls when the
//    worker's work dir is deleted: until then files of the worker may carry
//    the uid, and handing it to another worker would hand them over too.
//  - Names that cannot be a file name are refused; the directory is read
//    with a cap on its entries (the range's size plus slack).
// Not thread-safe; the daemon calls it on its event loop (small files).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "base/result.h"

namespace infervisor {

inline constexpr uid_t kDynamicUidFirst = 60578;
inline constexpr uid_t kDynamicUidLast = 61183;

// The user name a dynamic worker is shown under (USER=, userdb).
std::string dynamic_user_name(const std::string& worker);

class DynamicUsers {
  public:
    // Whether `id` is taken on this host outside the store (NSS user or group).
    using TakenOnHost = std::function<bool(uid_t id)>;

    explicit DynamicUsers(std::filesystem::path dir, uid_t first = kDynamicUidFirst,
                          uid_t last = kDynamicUidLast, TakenOnHost taken = {});

    // The worker's uid, allocating and persisting one on first use.
    Result<uid_t> acquire(const std::string& worker) const;
    // The worker's uid if it has one; never allocates.
    std::optional<uid_t> lookup(const std::string& worker) const;
    // Forgets the worker's uid (its files are gone); absent is not an error.
    Result<void> release(const std::string& worker) const;
    // Every allocation, by worker name.
    Result<std::map<std::string, uid_t>> list() const;

    const std::filesystem::path& dir() const { return dir_; }

  private:
    Result<uid_t> allocate(const std::string& worker) const;

    std::filesystem::path dir_;
    uid_t first_, last_;
    TakenOnHost taken_;
};

// DynamicUsers::list() for a reader that any local user may drive as often
// as they like (the userdb server, services/userdb_server.h): the store's
// files are read again only when its directory has changed (every acquire
// renames into it and every release unlinks from it, which changes its
// mtime). A directory changed less than a second before it was read may
// change again within the file system's timestamp granularity unseen, so
// then the next call reads again. Costs one stat() per call otherwise.
class DynamicUsersCache {
  public:
    explicit DynamicUsersCache(DynamicUsers users) : users_(std::move(users)) {}

    Result<std::map<std::string, uid_t>> list();
    // How often the files were read (tests).
    std::size_t reads() const { return reads_; }

  private:
    struct Key {
        long long mtime_ns = 0, ctime_ns = 0;
        unsigned long long inode = 0;
        bool operator==(const Key&) const = default;
    };

    DynamicUsers users_;
    std::optional<Key> key_;
    bool trusted_ = false;  // key_ is old enough to tell every change
    std::map<std::string, uid_t> cached_;
    std::size_t reads_ = 0;
};

// NSS says `id` is a user or a group.
bool id_known_to_nss(uid_t id);

}  // namespace infervisor
