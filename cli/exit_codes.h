// infervisorctl's exit codes. Scripts rely on them: never renumber.
#pragma once

namespace infervisor::cli {

enum ExitCode : int {
    kSuccess = 0,
    kFailure = 1,           // the daemon refused or failed; invalid config; I/O error
    kUsage = 2,             // bad command line
    kUnknownWorker = 3,     // no worker by that name
    kWorkerNotRunning = 3,  // status NAME...: a named worker is not running (systemctl's 3)
    kNotRunning = 4,        // nothing listens on the control socket
    kPermissionDenied = 5,  // the daemon (or the socket's mode) said no
};

}  // namespace infervisor::cli
