#include "supervise/exit_reason.h"

#include "base/signal_names.h"
#include "base/units.h"

namespace infervisor {

std::string ExitReason::describe() const {
    if (!start_error.empty()) return "could not start: " + start_error;
    // Our kill, not a crash: say why we killed it.
    if (no_ready_within) return "no " + awaited + " within " + format_duration(*no_ready_within);
    if (killed_by_policy && !kill_reason.empty()) return "killed: " + kill_reason;
    if (oom_at_own_limit()) return "oom-killed (memory.max reached)";
    if (oom_killed()) return "oom-killed by a host-wide OOM kill (memory.max not reached)";
    if (while_unsupervised && status_unknown)
        return "exited while the supervisor was down (exit status unknown)";
    if (while_unsupervised) return status.describe() + " while the supervisor was down";
    if (status_unknown) return "exited (exit status unknown: the run was adopted)";
    return status.describe();
}

void ExitReason::append_fields(std::vector<std::pair<std::string, std::string>>& fields) const {
    fields.emplace_back("OOM_KILLS", std::to_string(oom_kills));
    fields.emplace_back("LIMIT_OOMS", std::to_string(limit_ooms));
    fields.emplace_back("EXIT_REASON", describe());
    if (status_unknown)
        fields.emplace_back("EXIT_STATUS", "unknown");
    else if (status.kind == ExitStatus::Kind::exited)
        fields.emplace_back("EXIT_CODE", std::to_string(status.code));
    else
        fields.emplace_back("EXIT_SIGNAL", signal_name(status.signal));
}

}  // namespace infervisor
