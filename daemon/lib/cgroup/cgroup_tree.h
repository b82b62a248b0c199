// CgroupTree: the delegated subtree the workers live in, and its fixed layout.
//
//   <root>/                 a delegated cgroup (Delegate=yes), see below
//   ├── supervisor/         the daemon itself, when the root is its own cgroup
//   │   or anchor/          the anchor unit's process, when the root is its cgroup
//   │                       (cgroup v2: no processes in inner nodes)
//   └── workers/            +memory +pids +cpu enabled for its children, and
//       │                   +dmem where the kernel offers it (cgroup/dmem.h)
//       └── <name>/         one per worker, with its limits; the worker's
//           │               processes live here, and no controller is ever
//           │               enabled for its children
//           └── probe-<role>/  an exec probe's attempt (worker_probe): inside
//                           the worker's cgroup, so the worker's limits,
//                           freeze and kill hold it (cgroup v2 allows
//                           processes beside a child that gets no controllers)
//
// Two homes for the root (Home):
//   - anchor: the cgroup of infervisor-workers.service, a unit of its own
//     whose only process sleeps. The workers are then outside the daemon's
//     unit, so systemd's end of the daemon (kill -9, the watchdog, a
//     restart) does not end them, and the next daemon adopts them. The
//     daemon stays in its own unit's cgroup, which it never changes, so
//     systemd can always start a new daemon there.
//   - own: the daemon's own cgroup (or cgroup_root from the configuration):
//     the daemon moves itself into supervisor/. Workers end with the
//     daemon's unit (KillMode=mixed); an in-place re-execution keeps them.
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
    enum class Home { own, anchor };

    explicit CgroupTree(std::filesystem::path root, Home home = Home::own);

    // Picks the root from the daemon's own cgroup; if the daemon already sits
    // in a "supervisor" leaf (as after an in-place restart), its parent.
    static std::filesystem::path root_from_own_cgroup(const std::filesystem::path& own);

    // Checks that `memory` is available at the root (else an error that names
    // the missing controller and the remedy), moves every process of the root
    // into its leaf (supervisor/ with `self`, or anchor/), and enables the
    // worker controllers on root and workers/, and dmem on each where its
    // cgroup.controllers lists it (Linux 6.14+, when delegated).
    Result<void> setup(pid_t self);

    Home home() const { return home_; }
    // Whether workers outlive the daemon's process (the anchor home).
    bool outlives_daemon() const { return home_ == Home::anchor; }
    const CgroupDir& root() const { return root_; }
    CgroupDir workers() const { return root_.child("workers"); }
    CgroupDir worker(const std::string& name) const { return workers().child(name); }
    // The cgroup of an exec probe of that worker, by the probe's role.
    CgroupDir worker_probe(const std::string& name, const std::string& role) const {
        return worker(name).child("probe-" + role);
    }
    // The probe cgroups that exist now in that worker's cgroup, and the
    // probes/ cgroup of the layout before exec probes moved into the
    // worker's: what an earlier daemon's attempts left (a new daemon holds
    // no attempt, so all of it is to be reaped).
    std::vector<CgroupDir> leftover_probes(const std::string& name) const;
    CgroupDir retired_probes() const { return root_.child("probes"); }

    // Worker cgroups that exist now (for finding leftovers of an earlier run).
    std::vector<std::string> existing_workers() const { return workers().children(); }

    // The controllers every worker gets (dmem too where offered: optional).
    static const std::vector<std::string>& worker_controllers();

  private:
    Result<void> check_memory_controller() const;
    Result<void> move_into_leaf(pid_t self) const;

    CgroupDir root_;
    Home home_;
};

}  // namespace infervisor
