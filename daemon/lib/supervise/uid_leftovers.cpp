#include "supervise/uid_leftovers.h"

#include <fcntl.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "base/file_io.h"
#include "base/unique_fd.h"
#include "workdir/dir_entries.h"
#include "workdir/safe_path.h"
#include "workdir/tree_removal.h"

namespace infervisor {

namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxRecordBytes = 64 * 1024;

fs::path record_dir(const Paths& paths) { return paths.state_dir / "dynamic-user-dirs"; }

std::string record_text(const OwnedDirs& dirs) {
    std::string text;
    if (!dirs.workdir.empty()) text += "workdir " + dirs.workdir.string() + "\n";
    for (const auto& d : dirs.extra_dirs) text += "extra " + d.string() + "\n";
    return text;
}

// Removes parent/name (a tree, never following links) if it is the uid's.
bool remove_entry_of(int parent_fd, const char* name, uid_t uid, UidCleanup& out,
                     const fs::path& shown) {
    struct stat st;
    if (::fstatat(parent_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_uid != uid) return false;
    Result<void> removed =
        S_ISDIR(st.st_mode)
            ? remove_workdir_tree(parent_fd, name)
            : (::unlinkat(parent_fd, name, 0) == 0 || errno == ENOENT
                   ? Result<void>()
                   : Result<void>(errno_error("remove " + (shown / name).string())));
    if (!removed) {
        out.errors.push_back(removed.error().message());
        return false;
    }
    return true;
}

// Streams the listing (a shared /tmp may hold millions of entries, many of
// them the uid's own) and removes the uid's entries as they come.
void clean_temp_dir(const fs::path& dir, uid_t uid, UidCleanup& out) {
    UniqueFd fd(::open(dir.c_str(), kOpenDirNoFollow));
    if (!fd) return;  // not on this host
    UniqueFd listing(::openat(fd.get(), ".", kOpenDirNoFollow));
    if (!listing) return out.errors.push_back("cannot list " + dir.string());
    DirStream stream(std::move(listing), dir.string());
    for (;;) {
        auto entry = stream.next();
        if (!entry) return out.errors.push_back(entry.error().message());
        if (!*entry) return;
        std::string name(**entry);
        if (remove_entry_of(fd.get(), name.c_str(), uid, out, dir)) ++out.temp_entries_removed;
    }
}

// SysV IPC: walk the kernel's table by index (*_STAT), remove by id what the
// uid owns or created.
void remove_sysv_ipc(uid_t uid, UidCleanup& out) {
    auto mine = [uid](const ipc_perm& p) { return p.uid == uid || p.cuid == uid; };
    shm_info shm_summary{};
    int max = ::shmctl(0, SHM_INFO, reinterpret_cast<shmid_ds*>(&shm_summary));
    for (int i = 0; i <= max; ++i) {
        shmid_ds ds{};
        int id = ::shmctl(i, SHM_STAT, &ds);
        if (id >= 0 && mine(ds.shm_perm) && ::shmctl(id, IPC_RMID, nullptr) == 0)
            ++out.ipc_objects_removed;
    }
    seminfo sem_summary{};
    max = ::semctl(0, 0, SEM_INFO, &sem_summary);
    for (int i = 0; i <= max; ++i) {
        semid_ds ds{};
        int id = ::semctl(i, 0, SEM_STAT, &ds);
        if (id >= 0 && mine(ds.sem_perm) && ::semctl(id, 0, IPC_RMID) == 0)
            ++out.ipc_objects_removed;
    }
    msginfo msg_summary{};
    max = ::msgctl(0, MSG_INFO, reinterpret_cast<msqid_ds*>(&msg_summary));
    for (int i = 0; i <= max; ++i) {
        msqid_ds ds{};
        int id = ::msgctl(i, MSG_STAT, &ds);
        if (id >= 0 && mine(ds.msg_perm) && ::msgctl(id, IPC_RMID, nullptr) == 0)
            ++out.ipc_objects_removed;
    }
}

void remove_checkpoints(const Paths& paths, const std::string& worker, UidCleanup& out) {
    fs::path parent = paths.state_dir / "checkpoints";
    UniqueFd fd(::open(parent.c_str(), kOpenDirNoFollow));
    if (!fd) return;  // none ever written
    struct stat st;
    if (::fstatat(fd.get(), worker.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0) return;
    if (auto r = remove_workdir_tree(fd.get(), worker); !r)
        return out.errors.push_back("checkpoints of " + worker + ": " + r.error().message());
    out.checkpoints_removed = true;
}

bool owned_by(const fs::path& path, uid_t uid) {
    struct stat st;
    return ::lstat(path.c_str(), &st) == 0 && st.st_uid == uid;
}

}  // namespace

Result<void> record_owned_dirs(const Paths& paths, const std::string& worker,
                               const OwnedDirs& dirs) {
    if (!is_plain_name(worker)) return plain_error("bad worker name '" + worker + "'");
    if (recorded_owned_dirs(paths, worker) == dirs) return {};
    fs::path dir = record_dir(paths);
    if (::mkdir(dir.c_str(), 0700) < 0 && errno != EEXIST)
        return errno_error("create " + dir.string());
    fs::path tmp = dir / ("." + worker + ".tmp");
    UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd) return errno_error("create " + tmp.string());
    std::string text = record_text(dirs);
    if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) ||
        ::fsync(fd.get()) < 0) {
        auto e = errno_error("write " + tmp.string());
        ::unlink(tmp.c_str());
        return e;
    }
    if (::rename(tmp.c_str(), (dir / worker).c_str()) < 0) {
        auto e = errno_error("rename " + tmp.string());
        ::unlink(tmp.c_str());
        return e;
    }
    return {};
}

OwnedDirs recorded_owned_dirs(const Paths& paths, const std::string& worker) {
    OwnedDirs dirs;
    if (!is_plain_name(worker)) return dirs;
    auto text = read_regular_file(record_dir(paths) / worker, kMaxRecordBytes, "a record");
    if (!text) return dirs;
    std::istringstream in(*text);
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("workdir /", 0) == 0) dirs.workdir = line.substr(8);
        if (line.rfind("extra /", 0) == 0) dirs.extra_dirs.emplace_back(line.substr(6));
    }
    return dirs;
}

void forget_owned_dirs(const Paths& paths, const std::string& worker) {
    if (is_plain_name(worker)) ::unlink((record_dir(paths) / worker).c_str());
}

UidCleanup clean_up_after_uid(const Paths& paths, const std::string& worker, uid_t uid,
                              const OwnedDirs& owned, const std::vector<fs::path>& temp_dirs,
                              bool sysv_ipc) {
    UidCleanup out;
    if (uid == 0) {  // root's files are everyone's business: never "clean up" after root
        out.errors.push_back("refusing to clean up after uid 0");
        return out;
    }
    remove_checkpoints(paths, worker, out);
    for (const auto& dir : temp_dirs) clean_temp_dir(dir, uid, out);
    if (sysv_ipc) remove_sysv_ipc(uid, out);
    if (!owned.workdir.empty() && owned_by(owned.workdir, uid))
        out.still_owned.push_back(owned.workdir);
    for (const auto& extra : owned.extra_dirs)
        if (owned_by(extra, uid)) out.still_owned.push_back(extra);
    return out;
}

}  // namespace infervisor
