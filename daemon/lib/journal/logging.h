// The daemon's own log (spdlog): to the journal when run as a service
// (JOURNAL_STREAM names our stderr, as systemd sets it), else to stderr.
#pragma once

#include <string>

namespace infervisor {

// True when stderr is connected to journald (JOURNAL_STREAM matches it).
bool stderr_is_journal();

// Installs the default logger. `level` is trace/debug/info/warn/error.
void setup_logging(const std::string& level, bool to_journal, const std::string& identifier);

}  // namespace infervisor
