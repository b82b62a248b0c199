// The exec probe: a command run as the worker's user, passing when it exits 0.
//
// Where it runs: in a cgroup created for the attempt inside the worker's own
// (CgroupTree::worker_probe), which the process is born into (clone3
// CLONE_INTO_CGROUP, or its first act in the child where that is refused),
// so it never runs outside the worker's limits: its memory, pids and CPU
// count against the worker's memory.max, pids.max and cpu.weight, it is
// frozen with the worker and killed with it. It runs with the worker's
// credentials and hardening (the SpawnRequest the worker was launched with:
// no_new_privs, the capability bounding set, oom_score_adj), so a worker
// that ptraces its probe (same uid) gains nothing it does not have already.
// The probe's cgroup gets no controllers of its own: cgroup v2 allows
// processes in both the worker's cgroup and this child only while the
// worker's cgroup enables none for its children (the worker's limits are
// the bound).
//
// Contract: see ProbeAttempt. At the deadline (and on cancel()) the probe's
// whole cgroup is killed (cgroup.kill, which also ends frozen processes),
// so a hanging command and anything it forked go, and nothing of the
// worker's; `done` runs only once the cgroup is empty and removed, so an
// attempt never outlives itself and never piles up beside the next. The
// child is always reaped, also after cancel(). The worker's cgroup must
// exist (the caller runs probes only while the worker runs). A worker whose
// cgroup is frozen (cgroup.freeze, a suspension's or a policy's freeze) is
// not probed: the attempt fails at once with "the worker is frozen", since a
// process born into a frozen cgroup stops before its execve, which
// spawn_process waits for on the calling (loop) thread. The check and the
// spawn are one turn of the loop, where the daemon's own freezes happen; a
// freeze written by hand between them delays the spawn until the thaw.
#pragma once

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>

#include "cgroup/cgroup_dir.h"
#include "probe/probe_attempt.h"
#include "process/spawn_request.h"

namespace infervisor {

struct ExecProbeSetup {
    // argv, environment, credentials, working directory; cgroup_fd and the
    // standard streams are set by the probe (stdio: /dev/null).
    SpawnRequest request;
    // Created for the attempt inside the worker's cgroup, removed after it.
    CgroupDir cgroup;
};

std::shared_ptr<ProbeAttempt> start_exec_probe(boost::asio::io_context& io, ExecProbeSetup setup,
                                               Duration timeout, ProbeDone done);

}  // namespace infervisor
