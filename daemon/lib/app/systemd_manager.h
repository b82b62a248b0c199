// Questions to the service manager (systemd, PID 1): what a unit is doing
// and where its cgroup is. Used at start-up (where do the workers' cgroups
// live: app/workers_home.h) and on SIGTERM (is this a stop or a restart of
// our own unit).
//
// Contract: every call is synchronous. The bus itself is spoken to by
// infervisor-unit-state (daemon/unit-state/), a short-lived helper, so that
// the daemon does not map libsystemd (journal/journal_socket.h says why);
// each of its calls is bounded by kCallTimeout and the helper as a whole by
// kUnitStateDeadline, so a hung or absent manager costs at most that long.
// These are asked a few times per daemon lifetime, never on the hot path.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <string_view>

#include "base/result.h"

namespace infervisor {

inline constexpr std::chrono::seconds kCallTimeout{5};
inline constexpr std::chrono::seconds kUnitStateDeadline{20};

struct UnitState {
    std::string active_state;   // "active", "inactive", "activating", ...
    std::string control_group;  // "/system.slice/x.service", relative to the cgroup2 mount
    std::string job_type;       // the unit's pending job: "stop", "restart", ...; "" if none
};

// The unit's state as the manager sees it now, asked through `program`
// (base/paths.h: Paths::unit_state).
Result<UnitState> systemd_unit_state(const std::filesystem::path& program, const std::string& unit);

// Reads infervisor-unit-state's answer (three "Key=value" lines).
Result<UnitState> parse_unit_state(std::string_view answer);

// The unit this process belongs to ("infervisord.service"), from its cgroup
// in `procfs`/self/cgroup.
Result<std::string> own_systemd_unit(const std::filesystem::path& procfs);

// The unit of a cgroup path as systemd names it: past the slices, the first
// component ("/system.slice/infervisord.service/supervisor" is
// infervisord.service); an error for a path with no unit in it.
Result<std::string> unit_of_cgroup(std::string_view path);

}  // namespace infervisor
