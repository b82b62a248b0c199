// Questions to the service manager (systemd, PID 1) over its bus: what a
// unit is doing and where its cgroup is. Used at start-up (where do the
// workers' cgroups live: cgroup/worker_home.h) and on SIGTERM (is this a
// stop or a restart of our own unit).
//
// Contract: every call is synchronous and bounded by kCallTimeout, so a
// hung or absent manager costs at most that long; a connection is made per
// question (these are asked a few times per daemon lifetime, never on the
// hot path). As root the daemon talks to PID 1 directly on its private
// socket (/run/systemd/private), as systemctl does, so no D-Bus broker is
// needed; failing that, through the system bus.
#pragma once

#include <chrono>
#include <string>

#include "base/result.h"

namespace infervisor {

inline constexpr std::chrono::seconds kCallTimeout{5};

struct UnitState {
    std::string active_state;   // "active", "inactive", "activating", ...
    std::string control_group;  // "/system.slice/x.service", relative to the cgroup2 mount
    std::string job_type;       // the unit's pending job: "stop", "restart", ...; "" if none
};

// The unit's state as the manager sees it now.
Result<UnitState> systemd_unit_state(const std::string& unit);

// The unit this process belongs to ("infervisord.service"), from its cgroup.
Result<std::string> own_systemd_unit();

}  // namespace infervisor
