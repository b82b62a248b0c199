// PreparedChild: the parent's half of spawning. Everything run_child() will
// touch is built here, before cloning, because the child may not allocate.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "process/child_setup.h"
#include "process/spawn_request.h"

namespace infervisor {

// Owns the argv/envp arrays, the private stdio copies and the error pipe that
// plan points into. Must outlive the clone; `request` must outlive it too
// (plan points into its strings).
struct PreparedChild {
    std::vector<char*> argv;
    std::vector<char*> envp;
    UniqueFd stdio[3];
    UniqueFd error_read;
    UniqueFd error_write;
    std::string oom_score_adj;
    UniqueFd private_tmp_trees[2];  // for /tmp and /var/tmp
    ChildPlan plan;
};

// Fills `child` from `request`. Errors name the fd or resource that failed,
// e.g. "duplicate stdout fd 987".
Result<void> prepare_child(const SpawnRequest& request, PreparedChild& child);

// The failed step as a reader wants it: "setresuid(1000)", "chdir(/srv/x)", "execve".
std::string describe_child_step(ChildStep step, const SpawnRequest& request);

}  // namespace infervisor
