// CgroupTree: the daemon's delegated subtree and its fixed layout.
//
//   <root>/                 the unit's cgroup (Delegate=yes) or cgroup_root from config
//   ├── supervisor/         the daemon itself (cgroup v2: no processes in inner nodes)
//   └── workers/            +memory +pids +cpu enabled for its children
//       └── <name>/         one per worker, with its limits
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include "base/result.h"
#include "cgroup/cgroup_dir.h"

namespace infervisor {

class CgroupTree {
  public:
    explicit CgroupTree(std::filesystem::path root);

    // Picks the root from the daemon's own cgroup; if the daemon already sits
    // in a "supervisor" leaf (as after an in-place restart), its parent.
    static std::filesystem::path root_from_own_cgroup(const std::filesystem::path& own);

    // Checks that `memory` is available at the root (else an error that names
    // the missing controller and the remedy), moves `self` and any other
    // process of the root into supervisor/, and enables the worker
    // controllers on root and workers/.
    Result<void> setup(pid_t self);

    const CgroupDir& root() const { return root_; }
    CgroupDir workers() const { return root_.child("workers"); }
    CgroupDir worker(const std::string& name) const { return workers().child(name); }

    // Worker cgroups that exist now (for finding leftovers of an earlier run).
    std::vector<std::string> existing_workers() const { return workers().children(); }

    // The controllers every worker gets.
    static const std::vector<std::string>& worker_controllers();

  private:
    Result<void> check_memory_controller() const;
    Result<void> move_into_supervisor(pid_t self) const;

    CgroupDir root_;
};

}  // namespace infervisor
