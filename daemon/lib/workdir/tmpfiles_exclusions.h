// The tmpfiles.d fragment that excludes worker directories from aging.
//
// An `x PATH` line makes systemd-tmpfiles skip PATH (and everything below it)
// while aging any configured parent of it: an entry whose path has its own
// line is never cleaned through its parent's rule. It complements DirLock:
// the lock needs no file and works for tmpfiles >= 242; the x line needs no
// running daemon but is only read by tmpfiles runs that start after it is
// written (systemd-tmpfiles-clean.service reads /run/tmpfiles.d each run).
//
// Contract: the file is regenerated from the full set of protected paths
// each time (never patched), written to a temporary name that tmpfiles
// ignores (it only reads *.conf) and renamed over the old one, so a
// concurrent tmpfiles run reads either the old or the new file, never a
// partial one. An empty set removes the file.
#pragma once

#include <filesystem>
#include <set>
#include <string>

#include "base/result.h"

namespace infervisor {

// Not "infervisor.conf": a file in /run/tmpfiles.d masks the packaged
// /usr/lib/tmpfiles.d file of the same name (and one in /etc/tmpfiles.d masks
// this one), so the generated file needs a name of its own.
inline constexpr char kTmpfilesExclusionFile[] = "infervisor-workdirs.conf";

// True when `path` can be written on an x line verbatim: tmpfiles would read
// whitespace, quotes and backslashes as syntax, '%' as a specifier and
// '*', '?', '[' as a glob.
bool is_tmpfiles_safe_path(const std::string& path);

// The argument of an x line that matches exactly `path` (absolute) where
// possible: the path itself when is_tmpfiles_safe_path(), else a glob with
// each unsafe byte replaced by '?' (which tmpfiles' fnmatch() matches to any
// one character but '/'), so that a name with a space, a quote or a newline
// is still covered, at the price of also covering the few siblings that
// differ from it only in those bytes.
std::string tmpfiles_exact_pattern(const std::string& path);

// The file's content: a comment header and one sorted `x PATH` line per path.
Result<std::string> render_tmpfiles_exclusions(const std::set<std::filesystem::path>& paths);

// Atomically replaces <tmpfiles_dir>/infervisor-workdirs.conf, or removes it when
// `paths` is empty. tmpfiles_dir is created (0755) if missing.
Result<void> write_tmpfiles_exclusions(const std::filesystem::path& tmpfiles_dir,
                                       const std::set<std::filesystem::path>& paths);

// The same for any generated file: atomically replaces <tmpfiles_dir>/<name>
// (a plain "*.conf" name) with `content`, or removes it when `content` is
// empty.
Result<void> write_tmpfiles_file(const std::filesystem::path& tmpfiles_dir, const std::string& name,
                                 const std::string& content);

}  // namespace infervisor
