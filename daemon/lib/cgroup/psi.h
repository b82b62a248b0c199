// PSI (pressure stall information): the readings and their parser, for a
// cgroup's {memory,cpu,io}.pressure and /proc/pressure/{memory,cpu,io}, which
// share one format:
//
//   some avg10=0.00 avg60=0.00 avg300=0.00 total=0
//   full avg10=0.00 avg60=0.00 avg300=0.00 total=0
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>

#include "base/result.h"

namespace infervisor {

// One line of a PSI file: percentages of wall time (0-100) over 10 s, 60 s and
// 300 s, and the total stall time in microseconds.
struct PsiAverages {
    double avg10 = 0;
    double avg60 = 0;
    double avg300 = 0;
    uint64_t total_us = 0;

    bool operator==(const PsiAverages&) const = default;
};

// A whole PSI file. `full` is absent for cpu on kernels before 5.13.
struct PsiReading {
    PsiAverages some;
    std::optional<PsiAverages> full;

    bool operator==(const PsiReading&) const = default;
};

// The "some" line is required; the "full" line is optional (cpu before 5.13).
// Lines with another first word are ignored; a some/full line missing one of
// avg10, avg60, avg300, total, or with a malformed number, is an error.
Result<PsiReading> parse_psi(std::string_view text);

Result<PsiReading> read_psi(const std::filesystem::path& path);

}  // namespace infervisor
