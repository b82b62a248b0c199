#include "workdir/system_dirs.h"

#include <algorithm>
#include <array>
#include <iterator>
#include <string_view>

namespace infervisor {

namespace {

// Nothing at or below these is a directory for a worker.
constexpr std::array<std::string_view, 26> kSystemTrees = {
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/lost+found",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/snap",
    "/sys",
    "/usr",
    "/var/backups",
    "/var/cache/apt",
    "/var/cache/debconf",
    "/var/lib/apt",
    "/var/lib/dpkg",
    "/var/lib/systemd",
    "/var/log",
    "/var/mail",
    "/var/run",
    "/var/spool",
};

bool at_or_below(const std::filesystem::path& path, std::string_view tree) {
    std::filesystem::path outer(tree);
    auto [o, i] = std::mismatch(outer.begin(), outer.end(), path.begin(), path.end());
    return o == outer.end();
}

}  // namespace

std::string system_tree_of(const std::filesystem::path& path) {
    for (auto tree : kSystemTrees)
        if (at_or_below(path, tree)) return std::string(tree);
    // A user's home itself (below it, the user's own directories may serve a
    // worker that runs as that user; the parent walk refuses them to others).
    if (at_or_below(path, "/home") && std::distance(path.begin(), path.end()) <= 3) return "/home";
    return {};
}

}  // namespace infervisor
