// ExitStatus: how a process ended, as reported by waitid.
#pragma once

#include <signal.h>

#include <string>

namespace infervisor {

struct ExitStatus {
    enum class Kind { exited, signaled };
    Kind kind = Kind::exited;
    int code = 0;    // exit code, when kind == exited
    int signal = 0;  // terminating signal, when kind == signaled
    bool core_dumped = false;

    static ExitStatus exited_with(int code) { return {Kind::exited, code, 0, false}; }
    static ExitStatus killed_by(int sig, bool core = false) {
        return {Kind::signaled, 0, sig, core};
    }

    // Exited with code 0.
    bool success() const { return kind == Kind::exited && code == 0; }

    // "exited with code 3", "killed by SIGKILL", "killed by SIGABRT (core dumped)".
    std::string describe() const;

    bool operator==(const ExitStatus&) const = default;
};

// From the siginfo_t filled by waitid(WEXITED) for a terminated child
// (si_code CLD_EXITED, CLD_KILLED or CLD_DUMPED).
ExitStatus exit_status_from(const siginfo_t& info);

}  // namespace infervisor
