#include "workdir/deletion_watcher.h"

#include <sys/stat.h>
#include <unistd.h>

#include <set>

namespace infervisor {

namespace {

// IN_MOVED_TO only to recognise renames between watched directories (an
// atomic save: write x.tmp, rename to x), which remove nothing.
constexpr uint32_t kWatchMask = IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF |
                                IN_MOVE_SELF | IN_ONLYDIR | IN_EXCL_UNLINK;

DeletionEvent::Kind kind_of(uint32_t mask) {
    if (mask & IN_DELETE) return DeletionEvent::Kind::entry_deleted;
    if (mask & IN_MOVED_FROM) return DeletionEvent::Kind::entry_moved_out;
    if (mask & IN_DELETE_SELF) return DeletionEvent::Kind::dir_deleted;
    return DeletionEvent::Kind::dir_moved;
}

}  // namespace

bool was_removed(int dir_fd) {
    struct stat st;
    return ::fstat(dir_fd, &st) == 0 && st.st_nlink == 0;
}

Result<DeletionWatcher> DeletionWatcher::create(std::filesystem::path procfs) {
    UniqueFd fd(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    if (!fd) return errno_error("inotify_init1");
    return DeletionWatcher(std::move(fd), std::move(procfs));
}

Result<void> DeletionWatcher::watch(const std::string& owner, const std::filesystem::path& dir,
                                    int dir_fd) {
    auto via = procfs_ / "self/fd" / std::to_string(dir_fd);
    int wd = ::inotify_add_watch(fd_.get(), via.c_str(), kWatchMask);
    if (wd < 0) return errno_error("watch " + dir.string() + " for deletions");
    targets_[wd].push_back(Target{owner, dir});
    return {};
}

void DeletionWatcher::unwatch(const std::string& owner) {
    for (auto it = targets_.begin(); it != targets_.end();) {
        auto& list = it->second;
        std::erase_if(list, [&](const Target& t) { return t.owner == owner; });
        if (!list.empty()) {
            ++it;
            continue;
        }
        ::inotify_rm_watch(fd_.get(), it->first);
        it = targets_.erase(it);
    }
}

void DeletionWatcher::translate(const inotify_event& ev, std::vector<DeletionEvent>& out,
                                std::vector<uint32_t>& cookies, std::set<uint32_t>& arrived) {
    if (ev.mask & IN_Q_OVERFLOW) {
        out.push_back(DeletionEvent{DeletionEvent::Kind::overflow, {}, {}, {}, false});
        return;
    }
    auto it = targets_.find(ev.wd);
    if (it == targets_.end()) return;
    if (ev.mask & IN_IGNORED) {  // the watch is gone (directory deleted, or unwatched)
        targets_.erase(it);
        return;
    }
    if (ev.mask & IN_MOVED_TO) {
        arrived.insert(ev.cookie);
        return;
    }
    if (!(ev.mask & (IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF | IN_MOVE_SELF))) return;
    bool about_entry = ev.mask & (IN_DELETE | IN_MOVED_FROM);
    std::string entry = about_entry && ev.len > 0 ? std::string(ev.name) : std::string();
    for (const auto& target : it->second) {
        out.push_back(DeletionEvent{kind_of(ev.mask), target.owner, target.dir, entry,
                                    about_entry && (ev.mask & IN_ISDIR)});
        cookies.push_back(ev.mask & IN_MOVED_FROM ? ev.cookie : 0);
    }
}

Result<std::vector<DeletionEvent>> DeletionWatcher::drain(size_t max_reads) {
    std::vector<DeletionEvent> out;
    std::vector<uint32_t> cookies;  // parallel to out: the move cookie, or 0
    std::set<uint32_t> arrived;     // cookies of entries moved into a watched dir
    alignas(inotify_event) char buf[16 * 1024];
    more_pending_ = false;
    for (size_t reads = 0;; ++reads) {
        if (reads == max_reads) {
            more_pending_ = true;
            break;
        }
        ssize_t n = ::read(fd_.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) break;
        if (n < 0) return errno_error("read inotify events");
        for (ssize_t off = 0; off < n;) {
            const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
            translate(*ev, out, cookies, arrived);
            off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
        }
    }
    // A move whose other half landed in a watched directory is a rename.
    std::vector<DeletionEvent> kept;
    for (size_t i = 0; i < out.size(); ++i)
        if (cookies[i] == 0 || !arrived.count(cookies[i])) kept.push_back(std::move(out[i]));
    return kept;
}

}  // namespace infervisor
