#include "checkpoint/checkpoint_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>

#include "base/unique_fd.h"
#include "checkpoint/checkpoint_seal.h"
#include "workdir/disk_usage.h"
#include "workdir/owned_dir.h"
#include "workdir/safe_path.h"
#include "workdir/tree_removal.h"

namespace infervisor {

namespace fs = std::filesystem;

namespace {

constexpr size_t kSequenceDigits = 10;

std::optional<uint64_t> parse_sequence(const std::string& name) {
    if (name.size() != kSequenceDigits) return std::nullopt;
    if (!std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return std::nullopt;
    uint64_t value = std::strtoull(name.c_str(), nullptr, 10);
    if (value == 0) return std::nullopt;
    return value;
}

std::string info_name(uint64_t sequence) {
    return CheckpointStore::sequence_name(sequence) + ".info";
}

// NAME itself: root-owned, 0711, a real directory (never a symlink).
Result<UniqueFd> open_worker_dir(int root_fd, const std::string& name, const fs::path& shown) {
    if (::mkdirat(root_fd, name.c_str(), 0711) < 0 && errno != EEXIST)
        return errno_error("create directory " + shown.string());
    UniqueFd fd(::openat(root_fd, name.c_str(), kOpenDirNoFollow));
    if (!fd) {
        if (errno == ELOOP || errno == ENOTDIR)
            return plain_error(shown.string() + " is not a directory (a symbolic link?)");
        return errno_error("open directory " + shown.string());
    }
    struct stat st;
    if (::fstat(fd.get(), &st) < 0) return errno_error("stat " + shown.string());
    // An earlier version handed NAME to the worker: take it back.
    if ((st.st_uid != 0 || st.st_gid != 0) && ::fchown(fd.get(), 0, 0) < 0)
        return errno_error("chown " + shown.string() + " to root");
    if ((st.st_mode & 07777) != 0711 && ::fchmod(fd.get(), 0711) < 0)
        return errno_error("chmod " + shown.string());
    return fd;
}

// The names in NAME, refusing more than kMaxCheckpointDirEntries.
Result<std::vector<std::string>> bounded_names(int dir_fd, const fs::path& shown) {
    UniqueFd own(::openat(dir_fd, ".", kOpenDirNoFollow));
    if (!own) return errno_error("open " + shown.string());
    DIR* dir = ::fdopendir(own.get());
    if (!dir) return errno_error("read " + shown.string());
    own.release();
    std::vector<std::string> names;
    errno = 0;
    while (dirent* e = ::readdir(dir)) {
        std::string name = e->d_name;
        if (name == "." || name == "..") continue;
        if (names.size() == kMaxCheckpointDirEntries) {
            ::closedir(dir);
            return plain_error(shown.string() + " holds more than " +
                               std::to_string(kMaxCheckpointDirEntries) + " entries; refusing it");
        }
        names.push_back(std::move(name));
    }
    int read_errno = errno;
    ::closedir(dir);
    errno = read_errno;
    if (read_errno != 0) return errno_error("read " + shown.string());
    return names;
}

// True when the open directory has an entry besides "." and "..".
Result<bool> has_entries(UniqueFd dir_fd, const fs::path& shown) {
    DIR* dir = ::fdopendir(dir_fd.get());
    if (!dir) return errno_error("read " + shown.string());
    dir_fd.release();
    bool found = false;
    errno = 0;
    while (dirent* e = ::readdir(dir)) {
        std::string_view name = e->d_name;
        if (name != "." && name != "..") {
            found = true;
            break;
        }
    }
    int read_errno = errno;
    ::closedir(dir);
    if (!found && read_errno != 0) {
        errno = read_errno;
        return errno_error("read " + shown.string());
    }
    return found;
}

Result<UniqueFd> open_trash(int dir_fd, const fs::path& shown) {
    if (::mkdirat(dir_fd, kCheckpointTrashName, 0700) < 0 && errno != EEXIST)
        return errno_error("create directory " + (shown / kCheckpointTrashName).string());
    UniqueFd fd(::openat(dir_fd, kCheckpointTrashName, kOpenDirNoFollow));
    if (!fd) return errno_error("open directory " + (shown / kCheckpointTrashName).string());
    struct stat st;
    if (::fstat(fd.get(), &st) < 0 || st.st_uid != 0)
        return plain_error((shown / kCheckpointTrashName).string() +
                           " is not a root-owned directory; remove it");
    return fd;
}

}  // namespace

std::string CheckpointStore::sequence_name(uint64_t sequence) {
    std::string digits = std::to_string(sequence);
    if (digits.size() < kSequenceDigits) digits.insert(0, kSequenceDigits - digits.size(), '0');
    return digits;
}

Result<CheckpointStore> CheckpointStore::open(const fs::path& checkpoints_root,
                                              const std::string& name) {
    if (!is_plain_name(name)) return plain_error("not a plain worker name: '" + name + "'");
    WalkOptions walk;
    walk.create = CreateMissing::yes;
    walk.create_mode = 0711;
    auto root = open_trusted_dir(checkpoints_root, walk);
    if (!root) return root.error();
    fs::path path = checkpoints_root / name;
    auto fd = open_worker_dir(root->get(), name, path);
    if (!fd) return fd.error();
    CheckpointStore store(std::move(*fd), path);
    if (auto r = store.list(); !r) return r.error();
    return store;
}

Result<std::optional<CheckpointStore>> CheckpointStore::open_existing(
    const fs::path& checkpoints_root, const std::string& name) {
    if (!is_plain_name(name)) return plain_error("not a plain worker name: '" + name + "'");
    struct stat st;
    fs::path path = checkpoints_root / name;
    if (::lstat(path.c_str(), &st) < 0) {
        if (errno == ENOENT) return std::optional<CheckpointStore>();
        return errno_error("stat " + path.string());
    }
    auto store = open(checkpoints_root, name);
    if (!store) return store.error();
    return std::optional<CheckpointStore>(std::move(*store));
}

Result<void> CheckpointStore::list() {
    auto names = bounded_names(fd_.get(), path_);
    if (!names) return names.error();
    complete_.clear();
    for (const auto& name : *names) {
        auto sequence = parse_sequence(name);
        if (!sequence) continue;
        struct stat st;
        if (::fstatat(fd_.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0) continue;
        if (S_ISDIR(st.st_mode)) complete_.push_back({*sequence, path_ / name});
    }
    std::sort(complete_.begin(), complete_.end(),
              [](const auto& a, const auto& b) { return a.sequence < b.sequence; });
    return {};
}

std::optional<StoredCheckpoint> CheckpointStore::newest() const {
    if (complete_.empty()) return std::nullopt;
    return complete_.back();
}

std::optional<StoredCheckpoint> CheckpointStore::find(std::string_view id) const {
    for (const auto& c : complete_)
        if (sequence_name(c.sequence) == id) return c;
    return std::nullopt;
}

Result<void> CheckpointStore::to_trash(const std::string& name) {
    auto trash = open_trash(fd_.get(), path_);
    if (!trash) return trash.error();
    for (int attempt = 0; attempt < 16; ++attempt) {
        std::string unique = std::to_string(::time(nullptr)) + "-" + std::to_string(::getpid()) +
                             "-" + std::to_string(++trash_counter_);
        if (::renameat2(fd_.get(), name.c_str(), trash->get(), unique.c_str(), RENAME_NOREPLACE) ==
            0) {
            trash_flag_ = true;
            return {};
        }
        if (errno == ENOENT) return {};
        if (errno != EEXIST)
            return errno_error("move " + (path_ / name).string() + " to the trash");
    }
    return plain_error("move " + (path_ / name).string() + " to the trash: no free name");
}

Result<fs::path> CheckpointStore::fresh_staging(uid_t uid, gid_t gid) {
    if (auto r = to_trash(kCheckpointStagingName); !r) return r.error();
    DirOwner owner{uid, gid, 0700};
    owner.worker = path_.filename().string();
    owner.parent_is_daemons = true;  // NAME is root's, and only the daemon writes there
    auto dir = ensure_owned_dir(fd_.get(), kCheckpointStagingName, staging_path(), owner);
    if (!dir) return dir.error();
    return staging_path();
}

Result<void> CheckpointStore::take_staging() {
    fs::path staging = staging_path();
    UniqueFd dir(::openat(fd_.get(), kCheckpointStagingName, kOpenDirNoFollow));
    if (!dir) {
        if (errno == ENOENT) return plain_error(staging.string() + " does not exist");
        if (errno == ELOOP || errno == ENOTDIR)
            return plain_error(staging.string() + " is not a directory");
        return errno_error("open directory " + staging.string());
    }
    auto written = has_entries(std::move(dir), staging);
    if (!written) return written.error();
    if (!*written) return plain_error(staging.string() + " is empty: nothing was written");
    if (::renameat2(fd_.get(), kCheckpointStagingName, fd_.get(), kCheckpointIncomingName,
                    RENAME_NOREPLACE) < 0) {
        if (errno == EEXIST)
            return plain_error("the previous checkpoint of " + path_.string() +
                               " is still being judged");
        return errno_error("rename " + staging.string() + " to " + kCheckpointIncomingName);
    }
    return {};
}

Result<StoredCheckpoint> CheckpointStore::publish() {
    fs::path incoming = path_ / kCheckpointIncomingName;
    uint64_t sequence = complete_.empty() ? 1 : complete_.back().sequence + 1;
    for (int attempt = 0; attempt < 16; ++attempt, ++sequence) {
        std::string name = sequence_name(sequence);
        if (::renameat2(fd_.get(), kCheckpointIncomingName, fd_.get(), name.c_str(),
                        RENAME_NOREPLACE) == 0) {
            complete_.push_back({sequence, path_ / name});
            return complete_.back();
        }
        if (errno != EEXIST) return errno_error("rename " + incoming.string() + " to " + name);
    }
    return plain_error("publish " + incoming.string() + ": no free sequence number");
}

Result<void> CheckpointStore::discard_incoming() { return to_trash(kCheckpointIncomingName); }

Result<void> CheckpointStore::retire(uint64_t sequence) {
    auto it = std::find_if(complete_.begin(), complete_.end(),
                           [sequence](const auto& c) { return c.sequence == sequence; });
    if (it == complete_.end()) return {};
    if (auto r = to_trash(sequence_name(sequence)); !r) return r.error();
    if (auto r = to_trash(info_name(sequence)); !r) return r.error();
    complete_.erase(it);
    return {};
}

Result<UniqueFd> CheckpointStore::dup_dir() const {
    UniqueFd fd(::fcntl(fd_.get(), F_DUPFD_CLOEXEC, 0));
    if (!fd) return errno_error("duplicate the descriptor of " + path_.string());
    return fd;
}

Result<void> CheckpointStore::seal_incoming(int dir_fd, uid_t writer, uid_t reader) {
    UniqueFd fd(::openat(dir_fd, kCheckpointIncomingName, kOpenDirNoFollow));
    if (!fd) return errno_error("open the incoming checkpoint");
    return seal_checkpoint_tree(fd.get(), kCheckpointIncomingName, writer, reader);
}

Result<TreeUsage> CheckpointStore::measure_incoming(int dir_fd) {
    UniqueFd fd(::openat(dir_fd, kCheckpointIncomingName, kOpenDirNoFollow));
    if (!fd) return errno_error("open the incoming checkpoint");
    return measure_usage(fd.get());
}

Result<TreeUsage> CheckpointStore::measure(int dir_fd, uint64_t sequence) {
    std::string name = sequence_name(sequence);
    UniqueFd fd(::openat(dir_fd, name.c_str(), kOpenDirNoFollow));
    if (!fd) return errno_error("open checkpoint " + name);
    return measure_usage(fd.get());
}

Result<uint64_t> CheckpointStore::filesystem_bytes(int dir_fd) {
    struct statvfs st;
    if (::fstatvfs(dir_fd, &st) < 0) return errno_error("statvfs of the checkpoint directory");
    return static_cast<uint64_t>(st.f_blocks) * static_cast<uint64_t>(st.f_frsize);
}

Result<void> CheckpointStore::empty_trash(int dir_fd) {
    UniqueFd trash(::openat(dir_fd, kCheckpointTrashName, kOpenDirNoFollow));
    if (!trash) return errno == ENOENT ? Result<void>() : errno_error("open the checkpoint trash");
    return remove_tree_contents(trash.get(), "the checkpoint trash");
}

Result<void> CheckpointStore::write_info(int dir_fd, uint64_t sequence,
                                         const CheckpointInfo& info) {
    std::string text = "bytes=" + std::to_string(info.bytes) + "\n";
    if (info.seconds) {
        char seconds[32];
        std::snprintf(seconds, sizeof seconds, "%.3f", *info.seconds);
        text += "seconds=" + std::string(seconds) + "\n";
    }
    std::string name = info_name(sequence), temporary = name + ".tmp";
    UniqueFd fd(::openat(dir_fd, temporary.c_str(),
                         O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (!fd) return errno_error("create " + temporary);
    if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
        return errno_error("write " + temporary);
    if (::renameat(dir_fd, temporary.c_str(), dir_fd, name.c_str()) < 0)
        return errno_error("rename " + temporary);
    return {};
}

std::optional<CheckpointInfo> CheckpointStore::read_info(int dir_fd, uint64_t sequence) {
    UniqueFd fd(::openat(dir_fd, info_name(sequence).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) return std::nullopt;
    char buf[256];
    ssize_t n = ::read(fd.get(), buf, sizeof buf - 1);
    if (n <= 0) return std::nullopt;
    std::string text(buf, static_cast<size_t>(n));
    CheckpointInfo info;
    bool has_bytes = false;
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        std::string line = text.substr(start, end - start);
        if (line.rfind("bytes=", 0) == 0) {
            info.bytes = std::strtoull(line.c_str() + 6, nullptr, 10);
            has_bytes = true;
        } else if (line.rfind("seconds=", 0) == 0) {
            info.seconds = std::strtod(line.c_str() + 8, nullptr);
        }
        start = end + 1;
    }
    if (!has_bytes) return std::nullopt;
    struct stat st;
    if (::fstat(fd.get(), &st) == 0) info.written_at = static_cast<int64_t>(st.st_mtim.tv_sec);
    return info;
}

std::optional<int64_t> CheckpointStore::published_at(int dir_fd, uint64_t sequence) {
    if (auto info = read_info(dir_fd, sequence); info && info->written_at) return info->written_at;
    struct stat st;
    if (::fstatat(dir_fd, sequence_name(sequence).c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0 ||
        !S_ISDIR(st.st_mode))
        return std::nullopt;
    return static_cast<int64_t>(st.st_ctim.tv_sec);
}

}  // namespace infervisor
