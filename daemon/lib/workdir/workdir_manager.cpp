#include "workdir/workdir_manager.h"

#include "workdir/owned_dir.h"
#include "workdir/safe_path.h"
#include "workdir/tmpfiles_exclusions.h"
#include "workdir/tree_removal.h"

namespace infervisor {

namespace {

namespace fs = std::filesystem;

// Missing parents of the default work dir (<state_dir>/workers) are created
// traversable but not listable: a worker reaches its own dir without seeing
// the other workers' names.
constexpr mode_t kStateParentMode = 0711;
constexpr mode_t kOtherParentMode = 0755;

// How the parents of a worker directory are walked: a default work dir's
// parents belong to the daemon (root only); a configured path may pass
// through the worker's own directories.
WalkOptions parent_walk(bool is_default, uid_t uid, CreateMissing create) {
    if (is_default) return WalkOptions{0, create, kStateParentMode};
    return WalkOptions{uid, create, kOtherParentMode};
}

Result<PreparedDir> prepare_dir(const fs::path& path, const WalkOptions& walk,
                                const DirOwner& owner, bool protect, const fs::path& procfs) {
    auto parent = open_trusted_dir(path.parent_path(), walk);
    if (!parent) return parent.error();
    auto fd = ensure_owned_dir(parent->get(), path.filename().string(), path, owner);
    if (!fd) return fd.error();
    PreparedDir dir{path, std::move(*fd), {}};
    if (protect) {
        auto lock = DirLock::acquire(dir.fd.get(), path, procfs);
        if (!lock) return lock.error();
        dir.lock = std::move(*lock);
    }
    return dir;
}

WorkDirLayout layout_of(const PreparedWorkDir& prepared) {
    WorkDirLayout layout{prepared.workdir.path, prepared.tmpdir, {}};
    for (const auto& extra : prepared.extra_dirs) layout.extra_dirs.push_back(extra.path);
    return layout;
}

void add_protected(const PreparedWorkDir& prepared, std::set<fs::path>& out) {
    if (prepared.workdir.is_protected()) out.insert(prepared.workdir.path);
    for (const auto& extra : prepared.extra_dirs)
        if (extra.is_protected()) out.insert(extra.path);
}

}  // namespace

Result<PreparedWorkDir> WorkDirManager::prepare_dirs(const WorkDirSpec& spec, uid_t uid,
                                                     gid_t gid) const {
    if (spec.workdir.empty() && !is_plain_name(spec.worker))
        return plain_error("worker name '" + spec.worker + "' cannot name a work dir");
    fs::path path = resolve_workdir(spec, paths_);
    auto walk = parent_walk(spec.workdir.empty(), uid, CreateMissing::yes);
    DirOwner owner{uid, gid, 0700, spec.worker, spec.workdir.empty(), spec.adopt_workdir};
    auto workdir = prepare_dir(path, walk, owner, true, paths_.procfs);
    if (!workdir) return workdir.error();
    fs::path tmpdir = path / kWorkerTmpDirName;
    auto tmp = ensure_owned_dir(workdir->fd.get(), kWorkerTmpDirName, tmpdir,
                                {uid, gid, 0700, spec.worker, true});
    if (!tmp) return tmp.error();
    PreparedWorkDir prepared{spec, uid, gid, std::move(*workdir), tmpdir, {}};
    for (const auto& extra : spec.extra_dirs) {
        auto dir = prepare_dir(extra.path, parent_walk(false, uid, CreateMissing::yes),
                               DirOwner{uid, gid, extra.mode, spec.worker, false, extra.adopt},
                               extra.protect, paths_.procfs);
        if (!dir) return dir.error();
        prepared.extra_dirs.push_back(std::move(*dir));
    }
    return prepared;
}

Result<WorkDirLayout> WorkDirManager::prepare(const WorkDirSpec& spec, uid_t uid, gid_t gid) {
    auto prepared = prepare_dirs(spec, uid, gid);
    if (!prepared) return prepared.error();
    std::set<fs::path> paths;
    for (const auto& [name, other] : prepared_)
        if (name != spec.worker) add_protected(other, paths);
    add_protected(*prepared, paths);
    if (auto r = rewrite_if_changed(paths); !r) return r.error();
    // Assigned into the existing node, if any: the old locks are dropped only
    // now, after the new ones are held (shared locks do not conflict).
    auto& slot = prepared_[spec.worker];
    slot = std::move(*prepared);
    if (on_change_) on_change_(spec.worker);
    return layout_of(slot);
}

Result<void> WorkDirManager::release(const std::string& worker) {
    if (prepared_.erase(worker) == 0) return {};
    if (on_change_) on_change_(worker);
    return rewrite_if_changed(protected_paths());
}

Result<void> WorkDirManager::remove_workdir(const WorkDirSpec& spec, uid_t uid) const {
    if (prepared_.count(spec.worker))
        return plain_error("work dir of worker '" + spec.worker + "' is still in use");
    return remove_unprepared_workdir(spec, uid, paths_);
}

Result<void> remove_unprepared_workdir(const WorkDirSpec& spec, uid_t uid, const Paths& paths) {
    if (spec.workdir.empty() && !is_plain_name(spec.worker))
        return plain_error("worker name '" + spec.worker + "' cannot name a work dir");
    fs::path path = resolve_workdir(spec, paths);
    auto parent = open_trusted_dir(path.parent_path(),
                                   parent_walk(spec.workdir.empty(), uid, CreateMissing::no));
    if (!parent) {
        if (parent.error().code == ENOENT) return {};
        return parent.error();
    }
    auto removed = remove_workdir_tree(parent->get(), path.filename().string());
    if (!removed)
        return Error{removed.error().code,
                     "remove work dir " + path.string() + ": " + removed.error().what};
    return {};
}

Result<void> WorkDirManager::write_tmpfiles_exclusions() {
    auto paths = protected_paths();
    if (auto r = infervisor::write_tmpfiles_exclusions(paths_.tmpfiles_dir, paths); !r) return r;
    written_ = std::move(paths);
    return {};
}

Result<void> WorkDirManager::rewrite_if_changed(const std::set<fs::path>& paths) {
    if (written_ && *written_ == paths) return {};
    if (auto r = infervisor::write_tmpfiles_exclusions(paths_.tmpfiles_dir, paths); !r) return r;
    written_ = paths;
    return {};
}

const PreparedWorkDir* WorkDirManager::find(const std::string& worker) const {
    auto it = prepared_.find(worker);
    return it == prepared_.end() ? nullptr : &it->second;
}

std::vector<std::string> WorkDirManager::prepared_workers() const {
    std::vector<std::string> names;
    for (const auto& [name, prepared] : prepared_) names.push_back(name);
    return names;
}

std::set<fs::path> WorkDirManager::protected_paths() const {
    std::set<fs::path> paths;
    for (const auto& [name, prepared] : prepared_) add_protected(prepared, paths);
    return paths;
}

}  // namespace infervisor
