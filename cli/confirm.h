// Asking the person at the terminal before a command deletes something.
#pragma once

#include <optional>
#include <string>

namespace infervisor::cli {

// Prints `question` and " [y/N] " to stderr and reads one line from stdin.
// Returns true for "y" or "yes" (any case), false for anything else or end
// of input, and nullopt without asking when stdin is not a terminal: then
// there is nobody to ask, and the caller wants an explicit --yes instead.
std::optional<bool> ask_yes_no(const std::string& question);

}  // namespace infervisor::cli
