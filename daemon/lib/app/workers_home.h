// Where the workers' cgroup tree lives (cgroup/cgroup_tree.h, Home):
//   1. cgroup_root from the configuration or --cgroup-root: there, as given
//      (the daemon moves itself into its supervisor/ leaf);
//   2. else, when the unit sets INFERVISOR_WORKERS_UNIT (infervisord.service
//      names infervisor-workers.service): that unit's cgroup, asked of
//      systemd; the unit must be active (infervisord.service BindsTo it);
//   3. else the daemon's own cgroup, with a warning that workers then end
//      with the daemon's unit.
// An error only when no home can be found at all.
#pragma once

#include <filesystem>
#include <string>

#include "base/paths.h"
#include "base/result.h"
#include "cgroup/cgroup_tree.h"

namespace infervisor {

inline constexpr const char* kWorkersUnitEnv = "INFERVISOR_WORKERS_UNIT";

struct WorkersHome {
    std::filesystem::path root;
    CgroupTree::Home home = CgroupTree::Home::own;
};

// `cgroup_root`: the configured one ("" if none); `cgroup_mount`: where
// cgroup2 is mounted; `paths`: its procfs and the program that asks systemd
// (Paths::unit_state).
Result<WorkersHome> find_workers_home(const std::filesystem::path& cgroup_root,
                                      const std::filesystem::path& cgroup_mount,
                                      const Paths& paths);

}  // namespace infervisor
