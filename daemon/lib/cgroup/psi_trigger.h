// PSI triggers: a pressure file opened O_RDWR|O_NONBLOCK with
// "some|full STALL_US WINDOW_US" written to it wakes its poller with POLLPRI
// whenever the tasks stalled for STALL within any WINDOW. The event loop waits
// on the fd (in Asio: wait_error) and then reads the averages with read_psi().
//
// The kernel is particular about windows, and which rules apply depends on
// version and privilege, so the window is negotiated:
//   - every kernel: 0 < stall <= window <= 10 s;
//   - 500 ms <= window per the kernel's psi.rst; 6.1 returns EINVAL below;
//   - without CAP_SYS_RESOURCE, on kernels with unprivileged triggers (6.5,
//     "sched/psi: Allow unprivileged polling of N*2s period"), windows must be
//     whole multiples of 2 s, else EINVAL; older kernels refuse such a writer
//     with EPERM, and then no trigger is possible (the slow sampling tick is
//     the only wake-up). A root daemon can lack CAP_SYS_RESOURCE: this
//     development VM's root does, so here only 2 s multiples are accepted.
// The requested window is tried first; on EINVAL or EPERM from the write the
// next candidate of psi_trigger_candidates() is tried. The stall threshold is
// scaled with the window, so the trigger keeps meaning "stalled N % of the
// time". PsiTrigger reports what was chosen so the daemon can log it.
//
// /proc/pressure/* overwrites the last byte written with NUL before parsing,
// so the trigger text is written with a terminating NUL (cgroup files accept
// it too), as the kernel's own example does.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "base/unique_fd.h"

namespace infervisor {

enum class PsiLine { some, full };

struct PsiTriggerSpec {
    PsiLine line = PsiLine::some;
    Duration stall{150};
    Duration window{1000};

    bool operator==(const PsiTriggerSpec&) const = default;
};

// "some 150000 1000000": what is written to the pressure file.
std::string format_psi_trigger(const PsiTriggerSpec& spec);

// The specs to try, in order, without duplicates: the request (window capped
// at 10 s, stall capped at the window and at least 1 ms); then, for a window
// under 500 ms, 500 ms; then the 2 s multiple nearest the request (2 s..10 s).
// Pure, so the negotiation is testable without a kernel.
std::vector<PsiTriggerSpec> psi_trigger_candidates(const PsiTriggerSpec& requested);

struct PsiTrigger {
    UniqueFd fd;  // poll for POLLPRI; POLLERR means the file went away
    PsiTriggerSpec requested;
    PsiTriggerSpec chosen;  // what the kernel accepted
    std::string
        rejected;  // candidates refused before `chosen`, e.g. "some 150000 1000000 (EINVAL)"
};

// Opens `pressure_file` and installs the first candidate the kernel accepts.
// Fails when the file cannot be opened for writing (no PSI, or EPERM on
// kernels before 6.5 without CAP_SYS_RESOURCE), on any other write error, or
// when every candidate is refused.
Result<PsiTrigger> open_psi_trigger(const std::filesystem::path& pressure_file,
                                    const PsiTriggerSpec& requested);

}  // namespace infervisor
