#include "process/exit_status.h"

#include "base/signal_names.h"

namespace infervisor {

std::string ExitStatus::describe() const {
    if (kind == Kind::exited) return "exited with code " + std::to_string(code);
    return "killed by " + signal_name(signal) + (core_dumped ? " (core dumped)" : "");
}

ExitStatus exit_status_from(const siginfo_t& info) {
    switch (info.si_code) {
        case CLD_KILLED:
            return ExitStatus::killed_by(info.si_status);
        case CLD_DUMPED:
            return ExitStatus::killed_by(info.si_status, true);
        default:
            return ExitStatus::exited_with(info.si_status);
    }
}

}  // namespace infervisor
