// Reading PSI files: /proc/pressure/{memory,cpu,io} and a cgroup's
// {memory,cpu,io}.pressure, all in the same format:
//
//   some avg10=0.00 avg60=0.00 avg300=0.00 total=0
//   full avg10=0.00 avg60=0.00 avg300=0.00 total=0
#pragma once

#include <filesystem>
#include <string_view>

#include "base/result.h"
#include "policy/samples.h"

namespace infervisor {

// The "some" line is required; the "full" line is optional (cpu before 5.13).
// Lines with another first word are ignored; a some/full line missing one of
// avg10, avg60, avg300, total, or with a malformed number, is an error.
Result<PsiReading> parse_psi(std::string_view text);

Result<PsiReading> read_psi(const std::filesystem::path& path);

}  // namespace infervisor
