// Listing a directory through a descriptor, for the walks that must never
// follow a path (usage measurement, recursive removal).
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace infervisor {

// The names in the open directory `dir` (without "." and ".."); takes
// ownership of `dir`. `shown` names it in error messages.
Result<std::vector<std::string>> read_dir_names(UniqueFd dir, const std::string& shown);

}  // namespace infervisor
