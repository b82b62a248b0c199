// Small whole-file helpers for procfs and cgroupfs, which hold short text files
// that must be read and written in one system call each.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

#include "base/result.h"

namespace infervisor {

// Reads the whole file (up to 1 MiB; kernel interface files are small).
Result<std::string> read_file(const std::filesystem::path& path);

// Reads a whole regular file of at most `max_bytes` (a configuration file):
// a larger one is an error saying so, never a silently cut text; so is a
// file that is not a regular file (a FIFO or device would block or never end).
// `what` names the file in the size error ("a configuration file").
Result<std::string> read_regular_file(const std::filesystem::path& path, size_t max_bytes,
                                      std::string_view what);

// Writes `content` with a single write(2), as cgroupfs requires; the file must
// exist (O_CREAT is not used, so a typo never creates a stray file).
Result<void> write_file(const std::filesystem::path& path, std::string_view content);

// Replaces `path` with a file holding `content` (mode `mode`, this
// process's owner): written to "<dir>/.<name>.tmp" (O_NOFOLLOW), then
// renamed over `path`, so a reader sees the old file or the new one, never
// a part. The temporary file is removed when anything fails.
Result<void> replace_file(const std::filesystem::path& path, std::string_view content,
                          mode_t mode = 0600);

// Parses "key value" lines (memory.events, cgroup.events, memory.stat, vmstat)
// and returns the value for `key`, or an error when absent or malformed.
Result<long long> read_keyed_value(const std::filesystem::path& path, std::string_view key);
Result<long long> find_keyed_value(std::string_view text, std::string_view key);

// Strips trailing whitespace/newline.
std::string_view trim(std::string_view s);

// Writes all of `data` to `fd`, again after EINTR and short writes; false
// when a write fails (errno says why) or writes nothing.
bool write_all(int fd, std::string_view data);

}  // namespace infervisor
