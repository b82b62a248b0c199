// spawn_process: starts a worker program directly inside its cgroup.
#pragma once

#include "base/result.h"
#include "process/spawn_request.h"

namespace infervisor {

// Starts request.argv as a new process and returns once it has called execve
// successfully, or with an Error naming the program and the step that failed,
// e.g. "spawn /usr/bin/foo: setresuid(1000): Operation not permitted"
// (the failed child has then already been reaped).
//
// In the child, in this order: join the cgroup (fallback placement only),
// reset all signal dispositions and the signal mask, setsid, install stdio,
// setgroups + setresgid + setresuid (verified), PR_SET_NO_NEW_PRIVS, chdir,
// mark every other fd close-on-exec, execve with exactly request.environment.
//
// No PR_SET_PDEATHSIG: it fires when the *thread* that cloned exits, not the
// daemon, and a worker's lifetime is bounded by its cgroup instead: the daemon
// kills it with cgroup.kill, and systemd kills the whole service cgroup
// (the unit's KillMode=mixed ends in SIGKILL for the whole cgroup) if the daemon itself stops or
// dies.
//
// Blocks until the child has exec'ed (or failed), which is a short wait: the
// child does a few system calls. All signals are blocked in the calling thread
// for the duration of the clone, so no handler of the daemon ever runs in the
// child. The caller must not set SIGCHLD to SIG_IGN (that would auto-reap and
// make exit statuses unobservable).
Result<SpawnedProcess> spawn_process(const SpawnRequest& request);

}  // namespace infervisor
