// SignalDisposition: what a process does with a signal, from the masks of
// /proc/PID/status (SigBlk, SigIgn, SigCgt; proc(5)): so that the daemon
// does not send a cooperative checkpoint signal (SIGUSR1 by default) to a
// process that would be ended by it (issue 27, point 4: a worker that did
// not handle it was "killed by SIGUSR1").
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string_view>

#include "base/result.h"

namespace infervisor {

struct SignalDisposition {
    bool caught = false;   // a handler is installed (SigCgt)
    bool ignored = false;  // SIG_IGN (SigIgn)
    bool blocked = false;  // blocked by the main thread (SigBlk): a process
                           // that reads it from a signalfd blocks it first
    // The signal's default action would end or stop the process, and none
    // of the above keeps it from being taken.
    bool would_end_it = false;
};

// `status`: the text of /proc/PID/status. An error when a mask is missing
// or malformed.
Result<SignalDisposition> parse_signal_disposition(std::string_view status, int sig);
Result<SignalDisposition> read_signal_disposition(const std::filesystem::path& procfs, pid_t pid,
                                                  int sig);

// Whether the default action of `sig` ends or stops a process (not
// SIGCHLD, SIGCONT, SIGURG, SIGWINCH, whose default is to ignore them).
bool default_action_ends(int sig);

}  // namespace infervisor
