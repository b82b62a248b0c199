// service_notify: the daemon's messages to its service manager, as
// sd_notify(3) sends them (READY=1, STATUS=..., WATCHDOG=1), and the
// watchdog interval it asks for, as sd_watchdog_enabled(3) reads it; spoken
// directly so that the daemon does not map libsystemd (journal/
// journal_socket.h says why).
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

#include "base/result.h"

namespace infervisor {

// Sends `state` (newline-separated assignments) as one datagram to
// $NOTIFY_SOCKET (a path, or an abstract name when it starts with '@').
// Returns false, sending nothing, when the variable is unset: the daemon was
// not started by a service manager that listens. The environment is left as
// it is, so that a re-executed daemon can notify too. One thread only (the
// event loop's): the socket is made once and kept.
Result<bool> notify_service_manager(std::string_view state);

// The interval within which the manager wants WATCHDOG=1 ($WATCHDOG_USEC),
// when it wants one from this process ($WATCHDOG_PID unset or this pid);
// nullopt otherwise, or when the values are not numbers.
std::optional<std::chrono::microseconds> service_watchdog_interval();

}  // namespace infervisor
