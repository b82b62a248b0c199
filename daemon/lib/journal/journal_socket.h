// journal_socket: journald's two sockets, spoken to directly instead of
// through libsystemd's sd_journal_sendv() and sd_journal_stream_fd().
//
// Why: the daemon locks what it maps and runs (app/memory_lock.h), and
// libsystemd brought five more libraries with it (libgcrypt, liblzma,
// libzstd, liblz4, libcap) that the daemon never called: about 0.9 MiB
// pinned in the VM for two small, documented protocols. The CLI, which
// reads the journal, still links libsystemd.
//
// The native protocol (https://systemd.io/JOURNAL_NATIVE_PROTOCOL/): one
// datagram per entry to /run/systemd/journal/socket, each field "KEY=value\n",
// or, for a value with a newline in it, "KEY\n", the value's length as a
// 64-bit little-endian integer, the value and "\n". An entry too large for a
// datagram goes as a sealed memfd passed with SCM_RIGHTS, as libsystemd does.
//
// The stream protocol (for a worker's stdout and stderr): a stream
// connection to /run/systemd/journal/stdout, a header of seven lines
// (identifier, unit id, priority, level prefix, forward to syslog, to kmsg,
// to the console), then the output itself, one entry per line.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace infervisor {

inline constexpr const char* kJournalSocket = "/run/systemd/journal/socket";
inline constexpr const char* kJournalStreamSocket = "/run/systemd/journal/stdout";

// One entry in the native protocol's encoding. Each field is "KEY=value";
// one without '=' is left out (journald would drop the whole entry).
std::string encode_journal_entry(const std::vector<std::string>& fields);

// Sends one entry to journald's socket at `socket_path` (a test's own);
// fails when it is not there or refuses the entry.
Result<void> send_journal_entry(const std::vector<std::string>& fields,
                                const char* socket_path = kJournalSocket);

// A stream whose lines journald records as entries with
// SYSLOG_IDENTIFIER=`identifier` and PRIORITY=`priority` (0-7), for a
// child's stdout and stderr; a line that starts with "<N>" is recorded at
// priority N instead (the level prefix of sd-daemon(3)). The identifier
// must be one line.
Result<UniqueFd> open_journal_stream(const std::string& identifier, int priority,
                                     const char* socket_path = kJournalStreamSocket);

}  // namespace infervisor
