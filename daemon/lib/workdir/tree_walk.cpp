#include "workdir/tree_walk.h"

#include <cerrno>
#include <vector>

#include "base/unique_fd.h"
#include "workdir/dir_entries.h"

namespace infervisor {

namespace {

struct WalkFrame {
    DirStream stream;
    std::string name;  // in the parent frame's directory; empty for the root
};

UniqueFd open_walked_dir(int parent_fd, const char* name, bool noatime) {
    if (noatime) {
        UniqueFd fd(::openat(parent_fd, name, kOpenDirNoFollow | O_NOATIME));
        if (fd || errno != EPERM) return fd;
    }
    return UniqueFd(::openat(parent_fd, name, kOpenDirNoFollow));
}

// The path of `name` in the top frame, for errors only (built on demand, so
// that no frame holds a path that grows with the depth).
std::string path_of(const std::string& shown, const std::vector<WalkFrame>& stack,
                    const char* name) {
    std::string path = shown;
    for (size_t i = 1; i < stack.size(); ++i) path += "/" + stack[i].name;
    if (name) path += std::string("/") + name;
    return path;
}

}  // namespace

Result<void> walk_tree(int root_fd, const std::string& shown, TreeVisitor& visitor,
                       const TreeWalkOptions& options) {
    UniqueFd root = open_walked_dir(root_fd, ".", options.noatime);
    if (!root) return errno_error("open " + shown);
    std::vector<WalkFrame> stack;
    stack.push_back({DirStream(std::move(root), shown), {}});
    while (!stack.empty()) {
        int dir_fd = stack.back().stream.fd();
        auto entry = stack.back().stream.next();
        if (!entry) return Error{entry.error().code, "read " + path_of(shown, stack, nullptr)};
        if (!*entry) {
            std::string name = std::move(stack.back().name);
            stack.pop_back();
            if (stack.empty()) break;
            if (auto r = visitor.left(stack.back().stream.fd(), name.c_str()); !r) return r;
            continue;
        }
        std::string name(**entry);  // the stream's buffer is reused by the next read
        int depth = static_cast<int>(stack.size());
        struct statx sx;
        if (::statx(dir_fd, name.c_str(), AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT,
                    options.statx_mask | STATX_TYPE, &sx) < 0) {
            if (errno == ENOENT) continue;
            return errno_error("stat " + path_of(shown, stack, name.c_str()));
        }
        auto next = visitor.visit(dir_fd, name.c_str(), sx, depth);
        if (!next) return next.error();
        if (*next == TreeVisitor::Next::stop) return {};
        if (*next != TreeVisitor::Next::descend || !S_ISDIR(sx.stx_mode)) continue;
        if (depth > options.max_depth) {
            if (auto r = visitor.too_deep(dir_fd, name.c_str()); !r) return r;
            continue;
        }
        UniqueFd child = open_walked_dir(dir_fd, name.c_str(), options.noatime);
        if (!child) {
            if (errno == ENOENT) continue;
            if (errno == ELOOP || errno == ENOTDIR) {
                if (auto r = visitor.replaced(dir_fd, name.c_str()); !r) return r;
                continue;
            }
            return errno_error("open " + path_of(shown, stack, name.c_str()));
        }
        stack.push_back({DirStream(std::move(child), name), std::move(name)});
    }
    return {};
}

}  // namespace infervisor
