#include "workdir/fanotify_deletion_watcher.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <sys/fanotify.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "base/capabilities.h"

namespace infervisor {

namespace {

// FAN_RENAME (5.17+) reports both ends of a move in one event, so a rename
// within watched directories (an atomic save) is told from a move away;
// older kernels get FAN_MOVED_FROM, where every move counts as moved out.
constexpr uint64_t kRenameMask = FAN_DELETE | FAN_RENAME | FAN_ONDIR;
constexpr uint64_t kMovedFromMask = FAN_DELETE | FAN_MOVED_FROM | FAN_ONDIR;

std::string make_key(const void* fsid, int type, const unsigned char* handle, unsigned bytes) {
    std::string key(static_cast<const char*>(fsid), sizeof(__kernel_fsid_t));
    key.append(reinterpret_cast<const char*>(&type), sizeof type);
    key.append(reinterpret_cast<const char*>(handle), bytes);
    return key;
}

Result<std::string> key_of(int dir_fd, const std::filesystem::path& dir) {
    struct statfs sfs;
    if (::fstatfs(dir_fd, &sfs) < 0) return errno_error("statfs " + dir.string());
    static_assert(sizeof sfs.f_fsid == sizeof(__kernel_fsid_t));
    alignas(file_handle) unsigned char buf[sizeof(file_handle) + MAX_HANDLE_SZ];
    auto* handle = reinterpret_cast<file_handle*>(buf);
    handle->handle_bytes = MAX_HANDLE_SZ;
    int mount_id = 0;
    if (::name_to_handle_at(dir_fd, "", handle, &mount_id, AT_EMPTY_PATH) < 0)
        return errno_error("file handle of " + dir.string());
    return make_key(&sfs.f_fsid, handle->handle_type, handle->f_handle, handle->handle_bytes);
}

}  // namespace

Result<FanotifyDeletionWatcher> FanotifyDeletionWatcher::create() {
    // Without CAP_SYS_ADMIN, fanotify_init still succeeds (unprivileged mode,
    // 5.13+) but hides the pid of every other process: useless here.
    if (!has_effective_capability(CAP_SYS_ADMIN))
        return plain_error("no CAP_SYS_ADMIN (fanotify would not report who deleted)");
    UniqueFd fd(::fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | FAN_REPORT_DFID_NAME,
                                O_RDONLY | O_CLOEXEC));
    if (!fd) return errno_error("fanotify_init(FAN_REPORT_DFID_NAME)");
    return FanotifyDeletionWatcher(std::move(fd));
}

Result<void> FanotifyDeletionWatcher::watch(const std::string& owner,
                                            const std::filesystem::path& dir, int dir_fd) {
    auto key = key_of(dir_fd, dir);
    if (!key) return key.error();
    UniqueFd own(::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0));
    if (!own) return errno_error("dup descriptor of " + dir.string());
    if (mask_ == 0) mask_ = kRenameMask;
    if (::fanotify_mark(fd_.get(), FAN_MARK_ADD, mask_, own.get(), nullptr) < 0) {
        if (errno != EINVAL || mask_ != kRenameMask)
            return errno_error("fanotify mark on " + dir.string());
        mask_ = kMovedFromMask;  // FAN_RENAME needs 5.17: every move then counts as moved out
        if (::fanotify_mark(fd_.get(), FAN_MARK_ADD, mask_, own.get(), nullptr) < 0)
            return errno_error("fanotify mark on " + dir.string());
    }
    targets_.push_back(Target{owner, dir, std::move(own), std::move(*key)});
    return {};
}

void FanotifyDeletionWatcher::unwatch(const std::string& owner) {
    auto leaving = std::stable_partition(targets_.begin(), targets_.end(),
                                         [&](const Target& t) { return t.owner != owner; });
    for (auto it = leaving; it != targets_.end(); ++it) {
        bool shared = std::any_of(targets_.begin(), leaving,
                                  [&](const Target& t) { return t.key == it->key; });
        if (!shared) ::fanotify_mark(fd_.get(), FAN_MARK_REMOVE, mask_, it->fd.get(), nullptr);
    }
    targets_.erase(leaving, targets_.end());
}

bool FanotifyDeletionWatcher::watches(const std::string& owner) const {
    return std::any_of(targets_.begin(), targets_.end(),
                       [&](const Target& t) { return t.owner == owner; });
}

bool FanotifyDeletionWatcher::is_watched(const std::string& key) const {
    return std::any_of(targets_.begin(), targets_.end(),
                       [&](const Target& t) { return t.key == key; });
}

void FanotifyDeletionWatcher::translate(const char* event, size_t len,
                                        std::vector<DeletionReport>& out) const {
    const auto* meta = reinterpret_cast<const fanotify_event_metadata*>(event);
    if (meta->mask & FAN_Q_OVERFLOW) {
        out.push_back({DeletionEvent{DeletionEvent::Kind::overflow, {}, {}, {}, false}, 0});
        return;
    }
    if (!(meta->mask & (FAN_DELETE | FAN_MOVED_FROM | FAN_RENAME))) return;
    // The entry's directory and name: DFID_NAME (delete, moved from), or
    // OLD_DFID_NAME with NEW_DFID_NAME for where it went (rename).
    std::string from_key, name, to_key;
    for (size_t off = meta->metadata_len; off + sizeof(fanotify_event_info_header) <= len;) {
        const auto* hdr = reinterpret_cast<const fanotify_event_info_header*>(event + off);
        if (hdr->len == 0 || off + hdr->len > len) return;
        bool from = hdr->info_type == FAN_EVENT_INFO_TYPE_DFID_NAME ||
                    hdr->info_type == FAN_EVENT_INFO_TYPE_OLD_DFID_NAME;
        if (from || hdr->info_type == FAN_EVENT_INFO_TYPE_NEW_DFID_NAME) {
            const auto* fid = reinterpret_cast<const fanotify_event_info_fid*>(hdr);
            const auto* handle = reinterpret_cast<const file_handle*>(fid->handle);
            std::string key =
                make_key(&fid->fsid, handle->handle_type, handle->f_handle, handle->handle_bytes);
            if (from) {
                from_key = std::move(key);
                name = reinterpret_cast<const char*>(handle->f_handle + handle->handle_bytes);
            } else {
                to_key = std::move(key);
            }
        }
        off += hdr->len;
    }
    if (from_key.empty()) return;
    // Renamed within protected directories: nothing was removed.
    if ((meta->mask & FAN_RENAME) && is_watched(to_key)) return;
    auto kind = meta->mask & FAN_DELETE ? DeletionEvent::Kind::entry_deleted
                                        : DeletionEvent::Kind::entry_moved_out;
    for (const auto& t : targets_)
        if (t.key == from_key)
            out.push_back({DeletionEvent{kind, t.owner, t.dir, name, (meta->mask & FAN_ONDIR) != 0},
                           meta->pid > 0 ? meta->pid : 0});
}

Result<std::vector<DeletionReport>> FanotifyDeletionWatcher::drain(size_t max_reads) {
    std::vector<DeletionReport> out;
    alignas(fanotify_event_metadata) char buf[16 * 1024];
    more_pending_ = false;
    for (size_t reads = 0;; ++reads) {
        if (reads == max_reads) {
            more_pending_ = true;
            return out;
        }
        ssize_t n = ::read(fd_.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return out;
        if (n < 0) return errno_error("read fanotify events");
        if (n == 0) return out;
        for (auto* meta = reinterpret_cast<fanotify_event_metadata*>(buf); FAN_EVENT_OK(meta, n);
             meta = FAN_EVENT_NEXT(meta, n)) {
            if (meta->vers != FANOTIFY_METADATA_VERSION)
                return plain_error("fanotify: unknown metadata version");
            translate(reinterpret_cast<const char*>(meta), meta->event_len, out);
            if (meta->fd >= 0) ::close(meta->fd);  // never with FID reporting; be safe
        }
    }
}

}  // namespace infervisor
