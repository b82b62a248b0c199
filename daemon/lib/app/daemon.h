// Daemon: infervisord as a whole — configuration, cgroup tree, workers,
// signals and the systemd protocol (READY=1, RELOADING=1, STATUS=,
// WATCHDOG=1, STOPPING=1) on one event loop.
#pragma once

#include "app/daemon_options.h"

namespace infervisor {

// Runs until SIGTERM/SIGINT has stopped every worker. Returns the process
// exit code: 0 after a clean stop, 1 when start-up failed (the reason is
// logged, and sent to systemd as STATUS=).
int run_daemon(const DaemonOptions& options);

// --check-config: prints every error (file:line:column: message) to stderr,
// or a one-line summary to stdout. Returns 0 when valid, 1 when not.
int check_config(const DaemonOptions& options);

}  // namespace infervisor
