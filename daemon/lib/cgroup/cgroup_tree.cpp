#include "cgroup/cgroup_tree.h"

#include <cerrno>

namespace infervisor {

namespace fs = std::filesystem;

CgroupTree::CgroupTree(fs::path root, Home home) : root_(std::move(root)), home_(home) {}

fs::path CgroupTree::root_from_own_cgroup(const fs::path& own) {
    if (own.filename() == "supervisor") return own.parent_path();
    return own;
}

const std::vector<std::string>& CgroupTree::worker_controllers() {
    static const std::vector<std::string> kControllers = {"memory", "pids", "cpu"};
    return kControllers;
}

Result<void> CgroupTree::check_memory_controller() const {
    auto available = root_.controllers();
    if (!available) return available.error();
    std::string missing, have;
    for (const auto& c : *available) have += (have.empty() ? "" : " ") + c;
    for (const auto& c : worker_controllers())
        if (!available->count(c)) missing += (missing.empty() ? "" : " ") + c;
    if (missing.empty()) return {};
    return plain_error(
        "cgroup v2 controller(s) '" + missing + "' not available in " + root_.path().string() +
        " (available: '" + have +
        "'). infervisord needs the memory controller on the unified "
        "cgroup v2 hierarchy. On a cgroup v1 or hybrid host, boot with "
        "systemd.unified_cgroup_hierarchy=1 on the kernel command line; and run infervisord from "
        "its unit (Delegate=yes) so that the controllers are delegated to it");
}

Result<void> CgroupTree::move_into_leaf(pid_t self) const {
    CgroupDir leaf = root_.child(home_ == Home::anchor ? "anchor" : "supervisor");
    if (!leaf.exists()) {
        auto made = leaf.create();
        if (!made && made.error().code != EEXIST) return made.error();
    }
    if (home_ == Home::own) {
        auto moved = leaf.move_process(self);
        if (!moved) return moved.error();
    }
    // Whatever else lives in the root (an ExecStartPre helper, the anchor's
    // sleeping process) must leave too, or the kernel refuses to enable
    // controllers for the children.
    auto others = root_.procs();
    if (others)
        for (pid_t pid : *others) (void)leaf.move_process(pid);
    return {};
}

namespace {

// The worker controllers, and dmem where `dir` offers it (cgroup/dmem.h).
std::vector<std::string> controllers_for(const CgroupDir& dir) {
    std::vector<std::string> names = CgroupTree::worker_controllers();
    auto available = dir.controllers();
    if (available && available->count("dmem")) names.push_back("dmem");
    return names;
}

}  // namespace

Result<void> CgroupTree::setup(pid_t self) {
    if (auto r = check_memory_controller(); !r) return r;
    if (auto r = move_into_leaf(self); !r) return r;
    if (auto r = root_.enable_controllers(controllers_for(root_)); !r) return r;
    CgroupDir w = workers();
    if (!w.exists()) {
        auto made = w.create();
        if (!made && made.error().code != EEXIST) return made.error();
    }
    return w.enable_controllers(controllers_for(w));
}

std::vector<CgroupDir> CgroupTree::leftover_probes(const std::string& name) const {
    std::vector<CgroupDir> out;
    for (const auto& child : worker(name).children())
        if (child.starts_with("probe-")) out.push_back(worker(name).child(child));
    return out;
}

}  // namespace infervisor
