#include "supervise/exit_reason.h"

namespace infervisor {

std::string ExitReason::describe() const {
    if (oom_killed()) return "oom-killed (memory.max reached)";
    return status.describe();
}

}  // namespace infervisor
