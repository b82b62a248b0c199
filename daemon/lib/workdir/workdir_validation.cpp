#include "workdir/workdir_validation.h"

#include <limits.h>

#include <algorithm>
#include <array>
#include <string_view>

#include "workdir/safe_path.h"
#include "workdir/system_dirs.h"
#include "workdir/tmpfiles_exclusions.h"

namespace infervisor {

namespace {

namespace fs = std::filesystem;

// Directories that must never be handed to a worker, nor any parent of them.
constexpr std::array<std::string_view, 30> kSystemDirs = {
    "/bin",     "/boot",      "/dev",     "/etc",       "/home",     "/lib",
    "/lib32",   "/lib64",     "/libx32",  "/media",     "/mnt",      "/opt",
    "/proc",    "/root",      "/run",     "/run/user",  "/sbin",     "/srv",
    "/sys",     "/tmp",       "/usr",     "/usr/local", "/var",      "/var/tmp",
    "/var/lib", "/var/cache", "/var/log", "/var/spool", "/var/mail", "/var/run",
};
// Virtual file systems: nothing below them is a directory for a worker.
constexpr std::array<std::string_view, 3> kKernelDirs = {"/proc", "/sys", "/dev"};

struct NamedDir {
    std::string worker;
    std::string role;  // "work dir" or "extra dir"
    fs::path path;
    std::string describe() const { return "worker '" + worker + "' " + role + " " + path.string(); }
};

Result<fs::path> normalize(const std::string& text) {
    if (text.empty() || text.front() != '/') return plain_error("must be an absolute path");
    if (text.size() >= PATH_MAX) return plain_error("path too long");
    fs::path out = "/";
    for (const auto& part : fs::path(text).relative_path()) {
        if (part.empty()) continue;
        if (part == "." || part == "..") return plain_error("must not contain '.' or '..'");
        out /= part;
    }
    return out;
}

std::vector<NamedDir> collect_dirs(const std::vector<WorkDirSpec>& specs, const Paths& paths) {
    std::vector<NamedDir> dirs;
    for (const auto& spec : specs) {
        dirs.push_back({spec.worker, "work dir", resolve_workdir(spec, paths)});
        for (const auto& extra : spec.extra_dirs)
            dirs.push_back({spec.worker, "extra dir", extra.path});
    }
    return dirs;
}

void check_names(const std::vector<WorkDirSpec>& specs, ConfigErrors& errors) {
    for (const auto& spec : specs)
        if (spec.workdir.empty() &&
            (!is_plain_name(spec.worker) || !is_tmpfiles_safe_path(spec.worker)))
            errors.add_unplaced("worker '" + spec.worker +
                                "': the name cannot be used as its work dir's name; set 'workdir'");
}

// Why `dir` may not be used next to the daemon's own directories; empty if it may.
std::string daemon_dir_conflict(const fs::path& dir, const Paths& paths) {
    for (const auto& own : {paths.state_dir, paths.state_dir / "workers",
                            paths.state_dir / "checkpoints", paths.runtime_dir, paths.tmpfiles_dir})
        if (is_within(own, dir)) return "is or contains the daemon's directory " + own.string();
    for (const auto& own : {paths.runtime_dir, paths.tmpfiles_dir})
        if (is_within(dir, own)) return "is inside the daemon's directory " + own.string();
    return {};
}

// Inside the state dir a worker may only have its own default work dir (and
// what lies within it): the rest is the daemon's or other workers'
// (checkpoints/NAME, workers/OTHER, dynamic-users).
std::string state_dir_conflict(const NamedDir& dir, const Paths& paths) {
    if (!is_within(dir.path, paths.state_dir)) return {};
    if (is_within(dir.path, paths.state_dir / "workers" / dir.worker)) return {};
    return "is inside the daemon's state dir " + paths.state_dir.string() +
           ", where only its own work dir " + (paths.state_dir / "workers" / dir.worker).string() +
           " may be";
}

void check_daemon_dirs(const std::vector<NamedDir>& dirs, const Paths& paths,
                       ConfigErrors& errors) {
    for (const auto& dir : dirs)
        if (auto why = daemon_dir_conflict(dir.path, paths); !why.empty())
            errors.add_unplaced(dir.describe() + " " + why);
        else if (auto inside = state_dir_conflict(dir, paths); !inside.empty())
            errors.add_unplaced(dir.describe() + " " + inside);
}

// Sorted component-wise, a directory's subtree follows it directly, so one
// pass with a stack of the enclosing directories finds every overlap: each
// directory is compared with the nearest one enclosing it (or equal to it).
// O(n log n) comparisons for n directories, at most one error per
// directory; a directory enclosed by several others is reported once, with
// the nearest (the config is wrong either way).
void check_overlaps(std::vector<NamedDir> dirs, ConfigErrors& errors) {
    std::stable_sort(dirs.begin(), dirs.end(),
                     [](const NamedDir& a, const NamedDir& b) { return a.path < b.path; });
    std::vector<const NamedDir*> enclosing;
    for (const auto& dir : dirs) {
        while (!enclosing.empty() && !is_within(dir.path, enclosing.back()->path))
            enclosing.pop_back();
        if (!enclosing.empty()) {
            const NamedDir& outer = *enclosing.back();
            if (outer.worker != dir.worker)
                errors.add_unplaced("workers must not share directories: " + outer.describe() +
                                    " and " + dir.describe() + " overlap");
            else if (outer.path == dir.path)
                errors.add_unplaced("worker '" + dir.worker + "' names " + dir.path.string() +
                                    " twice (" + outer.role + ", " + dir.role + ")");
        }
        enclosing.push_back(&dir);
    }
}

}  // namespace

Result<fs::path> check_worker_dir_path(const std::string& text) {
    auto path = normalize(text);
    if (!path) return path;
    if (*path == "/") return plain_error("must not be /");
    for (auto kernel : kKernelDirs)
        if (is_within(*path, fs::path(kernel)))
            return plain_error(path->string() + " is under " + std::string(kernel));
    if (auto tree = system_tree_of(*path); !tree.empty())
        return plain_error(path->string() + " is in the system's own tree " + tree +
                           "; a worker's directory belongs under the state dir (the default), "
                           "/srv, /opt, /mnt, /var/tmp or a data disk");
    for (auto system : kSystemDirs)
        if (is_within(fs::path(system), *path))
            return plain_error(path->string() + " is a system directory or contains one (" +
                               std::string(system) + ")");
    if (!is_tmpfiles_safe_path(path->string()))
        return plain_error(path->string() +
                           " contains whitespace, quotes, '\\', '%' or glob characters");
    return path;
}

void validate_workdir_specs(const std::vector<WorkDirSpec>& specs, const Paths& paths,
                            ConfigErrors& errors) {
    check_names(specs, errors);
    auto dirs = collect_dirs(specs, paths);
    check_daemon_dirs(dirs, paths, errors);
    check_overlaps(std::move(dirs), errors);
}

bool is_within(const fs::path& inner, const fs::path& outer) {
    auto [o, i] = std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end());
    return o == outer.end();
}

}  // namespace infervisor
