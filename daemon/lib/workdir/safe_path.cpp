#include "workdir/safe_path.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <deque>
#include <vector>

namespace infervisor {

namespace {

namespace fs = std::filesystem;

constexpr int kMaxSymlinkHops = 32;

// One directory reached by the walk.
struct Step {
    UniqueFd fd;  // O_PATH
    struct stat st;
    fs::path shown;  // physical path, for messages
};

struct Walk {
    const WalkOptions& options;
    std::vector<Step> stack;
    std::deque<std::string> todo;
    int hops = 0;
};

std::deque<std::string> components_of(const fs::path& path) {
    std::deque<std::string> out;
    for (const auto& part : path.relative_path())
        if (!part.empty()) out.push_back(part.string());
    return out;
}

std::string describe_untrusted(const fs::path& shown, const struct stat& st, uid_t allowed) {
    if (st.st_uid != 0 && st.st_uid != allowed)
        return shown.string() + " is owned by uid " + std::to_string(st.st_uid) +
               "; only root or uid " + std::to_string(allowed) +
               " may own directories on the way to a worker directory";
    return shown.string() + " is writable by users other than root and has no sticky bit";
}

// A symlink no one but root could have planted or could replace.
bool is_trusted_symlink(const struct stat& link, const struct stat& parent) {
    return link.st_uid == 0 && parent.st_uid == 0 && is_trusted_dir(parent, 0);
}

Result<std::string> read_link(int dir_fd, const std::string& name, const fs::path& shown) {
    char buf[PATH_MAX];
    ssize_t n = ::readlinkat(dir_fd, name.c_str(), buf, sizeof buf);
    if (n < 0) return errno_error("read symbolic link " + shown.string());
    if (static_cast<size_t>(n) == sizeof buf)
        return plain_error("symbolic link target too long: " + shown.string());
    return std::string(buf, static_cast<size_t>(n));
}

Result<void> follow_symlink(Walk& walk, const std::string& name, const struct stat& link) {
    const Step& cur = walk.stack.back();
    fs::path shown = cur.shown / name;
    if (!is_trusted_symlink(link, cur.st))
        return plain_error("refusing to follow symbolic link " + shown.string() +
                           ": only root-owned links in root-owned directories are followed");
    if (++walk.hops > kMaxSymlinkHops)
        return Error{ELOOP, "resolve symbolic links at " + shown.string()};
    auto target = read_link(cur.fd.get(), name, shown);
    if (!target) return target.error();
    auto parts = components_of(*target);
    walk.todo.insert(walk.todo.begin(), parts.begin(), parts.end());
    if (fs::path(*target).is_absolute()) walk.stack.erase(walk.stack.begin() + 1, walk.stack.end());
    return {};
}

Result<void> stat_or_create(Walk& walk, const std::string& name, struct stat& st) {
    const Step& cur = walk.stack.back();
    fs::path shown = cur.shown / name;
    if (::fstatat(cur.fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) return {};
    if (errno != ENOENT || walk.options.create == CreateMissing::no)
        return errno_error("stat " + shown.string());
    if (::mkdirat(cur.fd.get(), name.c_str(), walk.options.create_mode) == 0) {
        // The mode as asked, whatever the daemon's umask (the unit sets 0077).
        // The parent is trusted (no one else may write it), so the name is ours.
        if (::fchmodat(cur.fd.get(), name.c_str(), walk.options.create_mode, 0) < 0)
            return errno_error("chmod " + shown.string());
    } else if (errno != EEXIST) {
        return errno_error("create directory " + shown.string());
    }
    if (::fstatat(cur.fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno_error("stat " + shown.string());
    return {};
}

Result<void> push_dir(Walk& walk, UniqueFd fd, fs::path shown) {
    struct stat st;
    if (::fstat(fd.get(), &st) < 0) return errno_error("stat " + shown.string());
    if (!is_trusted_dir(st, walk.options.allowed_uid))
        return plain_error(describe_untrusted(shown, st, walk.options.allowed_uid));
    walk.stack.push_back(Step{std::move(fd), st, std::move(shown)});
    return {};
}

Result<void> descend(Walk& walk, const std::string& name) {
    struct stat st;
    if (auto r = stat_or_create(walk, name, st); !r) return r;
    if (S_ISLNK(st.st_mode)) return follow_symlink(walk, name, st);
    fs::path shown = walk.stack.back().shown / name;
    if (!S_ISDIR(st.st_mode)) return plain_error(shown.string() + " is not a directory");
    // O_NOFOLLOW: if the entry was swapped for a symlink since the stat, this fails.
    UniqueFd fd(::openat(walk.stack.back().fd.get(), name.c_str(),
                         O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC));
    if (!fd) return errno_error("open directory " + shown.string());
    return push_dir(walk, std::move(fd), std::move(shown));
}

}  // namespace

bool is_trusted_dir(const struct stat& st, uid_t allowed_uid) {
    if (!S_ISDIR(st.st_mode)) return false;
    if (st.st_uid != 0 && st.st_uid != allowed_uid) return false;
    bool sticky = st.st_mode & S_ISVTX;
    if ((st.st_mode & S_IWOTH) && !sticky) return false;
    if ((st.st_mode & S_IWGRP) && st.st_gid != 0 && !sticky) return false;
    return true;
}

bool is_plain_name(std::string_view name) {
    return !name.empty() && name != "." && name != ".." &&
           name.find('/') == std::string_view::npos && name.find('\0') == std::string_view::npos;
}

Result<UniqueFd> open_trusted_dir(const fs::path& path, const WalkOptions& options) {
    if (!path.is_absolute()) return plain_error("not an absolute path: " + path.string());
    Walk walk{options, {}, components_of(path)};
    UniqueFd root(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!root) return errno_error("open /");
    if (auto r = push_dir(walk, std::move(root), "/"); !r) return r.error();
    while (!walk.todo.empty()) {
        std::string name = std::move(walk.todo.front());
        walk.todo.pop_front();
        if (name == ".") continue;
        if (name == "..") {
            // Only reachable through a trusted symlink's target.
            if (walk.stack.size() > 1) walk.stack.pop_back();
            continue;
        }
        if (auto r = descend(walk, name); !r) return r.error();
    }
    return std::move(walk.stack.back().fd);
}

}  // namespace infervisor
