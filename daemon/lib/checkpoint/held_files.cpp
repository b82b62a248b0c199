#include "checkpoint/held_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <charconv>
#include <functional>

#include "base/unique_fd.h"

namespace infervisor {

namespace fs = std::filesystem;

namespace {

// Linux 6.9's pidfd file system; older headers lack it.
constexpr long kPidfsMagic = 0x50494446;

// The device of the kernel's internal shmem mount: memfds, MAP_SHARED
// anonymous memory and SysV shared memory all live there, and criu
// re-creates them (their contents are in the image), so they name no file of
// the host. Found once by making a memfd of our own.
std::optional<uint64_t> internal_shmem_dev() {
    static const std::optional<uint64_t> dev = []() -> std::optional<uint64_t> {
        UniqueFd fd(::memfd_create("infervisor-held-files", MFD_CLOEXEC));
        struct stat st;
        if (!fd || ::fstat(fd.get(), &st) < 0) return std::nullopt;
        return uint64_t(st.st_dev);
    }();
    return dev;
}

HeldFile file_of(const struct statx& stx);

struct LinkStat {
    HeldFile file;
    mode_t mode = 0;
    uint64_t nlink = 0;
    uid_t uid = 0;
    long fs_type = 0;
};

// stat(2) of what the magic link `link` points to; nullopt when it is gone
// (the process exited, the fd was closed).
std::optional<LinkStat> stat_link(const std::string& link) {
    struct statx stx {};
    if (::statx(AT_FDCWD, link.c_str(), AT_STATX_SYNC_AS_STAT, STATX_BASIC_STATS | STATX_BTIME,
                &stx) < 0)
        return std::nullopt;
    struct statfs sfs {};
    if (::statfs(link.c_str(), &sfs) < 0) return std::nullopt;
    LinkStat out;
    out.file = file_of(stx);
    out.mode = stx.stx_mode;
    out.nlink = stx.stx_nlink;
    out.uid = stx.stx_uid;
    out.fs_type = long(sfs.f_type);
    return out;
}

// An object criu makes anew at a restore rather than reopening a file of the
// host by its path: a pipe, a socket, an anonymous inode (eventfd, epoll,
// timerfd, signalfd, inotify, a pidfd) or internal shmem (memfd, shared
// anonymous memory). These hold nothing of anyone else's.
bool is_anonymous_object(const LinkStat& st) {
    if (st.fs_type == long(PIPEFS_MAGIC) || st.fs_type == long(SOCKFS_MAGIC) ||
        st.fs_type == long(ANON_INODE_FS_MAGIC) || st.fs_type == kPidfsMagic)
        return true;
    auto shmem = internal_shmem_dev();
    return shmem && st.file.dev == *shmem;
}

// A restored file that may be new: an anonymous object, or a deleted regular
// file owned by the worker — criu re-creates a file the worker held after it
// was unlinked (a "ghost") from the image, with the image's owner, and unlinks
// it again; a file of someone else that was deleted stays refused.
bool is_fresh_object(const LinkStat& st, uid_t owner) {
    if (is_anonymous_object(st)) return true;
    return S_ISREG(st.mode) && st.nlink == 0 && st.uid == owner;
}

std::string printable(std::string text) {
    for (char& c : text)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    return text;
}

// Calls visit(what, link) for each magic link of process `pid`: "fd 3" with
// /proc/PID/fd/3, "mapping 7f..-7f.." with /proc/PID/map_files/..., "cwd",
// "root", "exe". visit returns false to stop. A process that is gone yields
// nothing.
using LinkVisitor = std::function<bool(const std::string& what, const std::string& link)>;

bool visit_dir_links(const fs::path& dir, const std::string& label, const LinkVisitor& visit) {
    UniqueFd fd(::open(dir.c_str(), kOpenDirNoFollow));
    if (!fd) return true;
    DIR* d = ::fdopendir(fd.get());
    if (!d) return true;
    (void)fd.release();
    bool go_on = true;
    while (go_on) {
        struct dirent* e = ::readdir(d);
        if (!e) break;
        std::string name = e->d_name;
        if (name == "." || name == "..") continue;
        go_on = visit(label + " " + name, (dir / name).string());
    }
    ::closedir(d);
    return go_on;
}

void visit_process_links(const fs::path& procfs, pid_t pid, const LinkVisitor& visit) {
    fs::path base = procfs / std::to_string(pid);
    if (!visit_dir_links(base / "fd", "fd", visit)) return;
    if (!visit_dir_links(base / "map_files", "mapping", visit)) return;
    for (const char* name : {"cwd", "root", "exe"})
        if (!visit(name, (base / name).string())) return;
}

HeldFile file_of(const struct statx& stx) {
    HeldFile f;
    f.dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
    f.ino = stx.stx_ino;
    if (stx.stx_mask & STATX_BTIME) {
        f.btime_sec = stx.stx_btime.tv_sec;
        f.btime_nsec = stx.stx_btime.tv_nsec;
    }
    return f;
}

// The dir `path` (absolute) as reached from / without following any symlink
// (RESOLVE_NO_SYMLINKS also refuses /proc's magic links); nullopt when it
// cannot be.
std::optional<HeldFile> dir_without_symlinks(const std::string& path) {
    struct open_how how {};
    how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
    how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    UniqueFd fd(int(::syscall(SYS_openat2, AT_FDCWD, path.c_str(), &how, sizeof how)));
    struct statx stx {};
    if (!fd || ::statx(fd.get(), "", AT_EMPTY_PATH, STATX_BASIC_STATS | STATX_BTIME, &stx) < 0)
        return std::nullopt;
    return file_of(stx);
}

std::string link_text(const std::string& link) {
    char buf[4096];
    ssize_t n = ::readlink(link.c_str(), buf, sizeof buf);
    return n > 0 ? printable(std::string(buf, size_t(n))) : "?";
}

}  // namespace

std::string format_held_file(const HeldFile& file) {
    std::string nsec = std::to_string(file.btime_nsec);
    return std::to_string(major(file.dev)) + ":" + std::to_string(minor(file.dev)) + ":" +
           std::to_string(file.ino) + ":" + std::to_string(file.btime_sec) + "." +
           std::string(9 - std::min<size_t>(9, nsec.size()), '0') + nsec;
}

std::optional<HeldFile> parse_held_file(std::string_view text) {
    const char* p = text.data();
    const char* end = text.data() + text.size();
    auto number = [&](auto& out, char stop) {
        auto [next, ec] = std::from_chars(p, end, out);
        if (ec != std::errc() || next == p) return false;
        p = next;
        if (stop == '\0') return p == end;
        if (p == end || *p != stop) return false;
        ++p;
        return true;
    };
    unsigned major_id = 0, minor_id = 0;
    HeldFile file;
    std::string_view nsec_text;
    if (!number(major_id, ':') || !number(minor_id, ':') || !number(file.ino, ':') ||
        !number(file.btime_sec, '.'))
        return std::nullopt;
    nsec_text = std::string_view(p, size_t(end - p));
    if (nsec_text.size() != 9 || !number(file.btime_nsec, '\0') || file.btime_nsec >= 1000000000u)
        return std::nullopt;
    file.dev = makedev(major_id, minor_id);
    return file;
}

Result<void> add_held_files(const fs::path& procfs, const std::vector<pid_t>& pids,
                            std::set<HeldFile>& held) {
    bool too_many = false;
    for (pid_t pid : pids) {
        visit_process_links(procfs, pid, [&](const std::string&, const std::string& link) {
            auto st = stat_link(link);
            if (!st || is_anonymous_object(*st)) return true;
            if (held.size() >= kMaxHeldFiles && !held.contains(st->file)) {
                too_many = true;
                return false;
            }
            held.insert(st->file);
            return true;
        });
        if (too_many)
            return plain_error("the worker holds more than " + std::to_string(kMaxHeldFiles) +
                               " distinct files: a restore of it could not be verified");
    }
    return {};
}

std::optional<std::string> first_unheld_file(const fs::path& procfs, const std::vector<pid_t>& pids,
                                             const std::set<HeldFile>& held, uid_t owner) {
    std::optional<std::string> found;
    for (pid_t pid : pids) {
        visit_process_links(procfs, pid, [&](const std::string& what, const std::string& link) {
            auto st = stat_link(link);
            if (!st || is_fresh_object(*st, owner) || held.contains(st->file)) return true;
            found = "pid " + std::to_string(pid) + " " + what + " is " + link_text(link) + " (" +
                    format_held_file(st->file) +
                    "), which the worker did not hold at the checkpoint";
            return false;
        });
        if (found) break;
    }
    return found;
}

namespace {

// Adds the dir of `path` (absolute), what criu will create in it (`what`,
// for errors) at a restore, once per dir.
Result<void> add_creation_dir(const std::string& path, const std::string& what,
                              std::vector<GhostDir>& dirs) {
    size_t slash = path.rfind('/');
    if (path.empty() || path[0] != '/' || slash == std::string::npos)
        return plain_error(what + " has the relative name " + printable(path) +
                           ": a restore of it could not be checked");
    std::string dir = slash == 0 ? "/" : path.substr(0, slash);
    for (const auto& known : dirs)
        if (known.path == dir) return {};
    auto resolved = dir.find('\n') == std::string::npos ? dir_without_symlinks(dir) : std::nullopt;
    if (!resolved)
        return plain_error(what + " is in " + printable(dir) +
                           ", which is gone or cannot be reached without a symlink: a restore of "
                           "it could not be checked");
    if (dirs.size() >= kMaxHeldFiles)
        return plain_error("the worker's deleted files and bound sockets are in more than " +
                           std::to_string(kMaxHeldFiles) + " dirs");
    dirs.push_back({dir, *resolved});
    return {};
}

// The inode of a "socket:[N]" link text.
std::optional<uint64_t> socket_inode(const std::string& text) {
    if (!text.starts_with("socket:[") || !text.ends_with("]")) return std::nullopt;
    uint64_t ino = 0;
    auto [ptr, ec] = std::from_chars(text.data() + 8, text.data() + text.size() - 1, ino);
    if (ec != std::errc() || ptr != text.data() + text.size() - 1) return std::nullopt;
    return ino;
}

// The names that the sockets `inodes` are bound to, from a /proc/PID/net/unix
// text ("Num RefCount Protocol Flags Type St Inode Path"); abstract names
// ("@...") bind nothing in a file system and are left out. At most
// kMaxHeldFiles lines are read.
std::vector<std::string> bound_names(const std::string& text, const std::set<uint64_t>& inodes) {
    std::vector<std::string> out;
    size_t pos = text.find('\n');  // the header
    for (size_t lines = 0; pos != std::string::npos && lines < kMaxHeldFiles * 16; ++lines) {
        size_t begin = pos + 1;
        pos = text.find('\n', begin);
        std::string_view line(text.data() + begin,
                              (pos == std::string::npos ? text.size() : pos) - begin);
        // Seven blank-separated fields, then the name (which may hold blanks).
        size_t at = 0;
        std::string_view inode_field;
        for (int field = 0; field < 7 && at != std::string_view::npos; ++field) {
            at = line.find_first_not_of(' ', at);
            if (at == std::string_view::npos) break;
            size_t stop = line.find(' ', at);
            if (field == 6)
                inode_field = line.substr(
                    at, stop == std::string_view::npos ? std::string_view::npos : stop - at);
            at = stop;
        }
        if (at == std::string_view::npos || inode_field.empty()) continue;
        uint64_t ino = 0;
        auto [ptr, ec] =
            std::from_chars(inode_field.data(), inode_field.data() + inode_field.size(), ino);
        if (ec != std::errc() || !inodes.contains(ino)) continue;
        std::string_view name = line.substr(at + 1);
        if (name.empty() || name.front() == '@') continue;
        out.emplace_back(name);
    }
    return out;
}

std::string read_proc_text(const fs::path& path, size_t max) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    std::string text;
    if (!fd) return text;
    char buf[65536];
    for (ssize_t n; text.size() < max && (n = ::read(fd.get(), buf, sizeof buf)) > 0;)
        text.append(buf, size_t(n));
    return text;
}

}  // namespace

Result<void> add_ghost_dirs(const fs::path& procfs, const std::vector<pid_t>& pids,
                            std::vector<GhostDir>& dirs) {
    constexpr std::string_view kDeleted = " (deleted)";
    std::optional<Error> error;
    for (pid_t pid : pids) {
        std::set<uint64_t> sockets;
        visit_process_links(procfs, pid, [&](const std::string& what, const std::string& link) {
            if (!what.starts_with("fd ") && !what.starts_with("mapping ")) return true;
            char buf[4096];
            ssize_t n = ::readlink(link.c_str(), buf, sizeof buf);
            std::string path = n > 0 ? std::string(buf, size_t(n)) : std::string();
            if (auto ino = socket_inode(path)) {
                if (sockets.size() < kMaxHeldFiles) sockets.insert(*ino);
                return true;
            }
            auto st = stat_link(link);
            if (!st || !S_ISREG(st->mode) || st->nlink != 0 || is_anonymous_object(*st))
                return true;
            if (path.ends_with(kDeleted)) path.resize(path.size() - kDeleted.size());
            auto added = add_creation_dir(
                path, "pid " + std::to_string(pid) + " " + what + ", a deleted file,", dirs);
            if (!added) error = added.error();
            return !error;
        });
        if (error) return *error;
        if (sockets.empty()) continue;
        // Unix sockets bound to a path: criu binds them again there, as root.
        std::string table = read_proc_text(procfs / std::to_string(pid) / "net/unix", 16 << 20);
        for (const auto& name : bound_names(table, sockets))
            if (auto added = add_creation_dir(
                    name, "pid " + std::to_string(pid) + "'s unix socket " + printable(name), dirs);
                !added)
                return added.error();
    }
    return {};
}

std::optional<std::string> first_moved_ghost_dir(const std::vector<GhostDir>& dirs) {
    for (const auto& d : dirs) {
        auto now = dir_without_symlinks(d.path);
        if (!now)
            return "the dir " + printable(d.path) +
                   " of a deleted file or bound socket the worker held is gone or reached "
                   "through a symlink";
        if (*now != d.dir)
            return "the dir " + printable(d.path) +
                   " of a deleted file or bound socket the worker held is another dir now (" +
                   format_held_file(*now) + ", was " + format_held_file(d.dir) + ")";
    }
    return std::nullopt;
}

}  // namespace infervisor
