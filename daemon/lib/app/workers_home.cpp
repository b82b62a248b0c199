#include "app/workers_home.h"

#include <spdlog/spdlog.h>

#include <cstdlib>

#include "app/systemd_manager.h"
#include "cgroup/cgroup_discovery.h"
#include "cgroup/delegation.h"

namespace infervisor {

namespace fs = std::filesystem;

namespace {

void warn_unless_delegated(const fs::path& root, const char* remedy) {
    if (delegation_mark(root) == DelegationMark::absent)
        spdlog::warn(
            "cgroup {} is not marked as delegated (no trusted.delegate xattr): unless this is a "
            "container or systemd < 251, systemd may move or kill the workers; {}",
            root.string(), remedy);
}

// The anchor unit's cgroup, if the unit is active; otherwise why not.
Result<fs::path> anchor_cgroup(const fs::path& program, const std::string& unit,
                               const fs::path& cgroup_mount) {
    auto state = systemd_unit_state(program, unit);
    if (!state) return state.error();
    if (state->active_state != "active" || state->control_group.empty())
        return plain_error(unit + " is " + state->active_state);
    return cgroup_mount / fs::path(state->control_group).relative_path();
}

}  // namespace

Result<WorkersHome> find_workers_home(const fs::path& cgroup_root, const fs::path& cgroup_mount,
                                      const Paths& paths) {
    if (!cgroup_root.empty()) return WorkersHome{cgroup_root, CgroupTree::Home::own};
    if (const char* unit = std::getenv(kWorkersUnitEnv); unit && *unit) {
        auto anchor = anchor_cgroup(paths.unit_state, unit, cgroup_mount);
        if (anchor) {
            warn_unless_delegated(*anchor, "its unit needs Delegate=yes");
            return WorkersHome{*anchor, CgroupTree::Home::anchor};
        }
        spdlog::warn(
            "cannot use {} for the workers ({}): they live in the daemon's own cgroup instead, "
            "and end when the daemon's process does (kill -9, watchdog, restart)",
            unit, anchor.error().message());
    }
    auto own = discover_own_cgroup(paths.procfs);
    if (!own) return own.error();
    fs::path root = CgroupTree::root_from_own_cgroup(*own);
    warn_unless_delegated(root,
                          "run infervisord through infervisord.service (Delegate=yes) or pass "
                          "--cgroup-root");
    return WorkersHome{root, CgroupTree::Home::own};
}

}  // namespace infervisor
