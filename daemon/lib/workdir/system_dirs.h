// Where a worker's directory may never be: the system's own trees, whose
// directories belong to the OS, its package manager, its users or systemd.
// A worker given such a directory would have it chowned to it and could
// write into it (seen: /var/lib/dpkg became a worker's, 0700).
//
// Contract: lexical, on a normalized absolute path (no "." or ".."); the
// run-time rule of owned_dir.h (an existing directory is handed over only if
// the daemon made it or the operator marked it adoptable) covers every other
// existing directory. Workers' directories belong under the state dir (the
// default), /srv, /opt, /mnt, /media, /var/tmp, /tmp or a data disk.
#pragma once

#include <filesystem>
#include <string>

namespace infervisor {

// The system tree `path` is at or below, or empty when it is in none. A
// user's home directory itself (/home/NAME) counts as /home.
std::string system_tree_of(const std::filesystem::path& path);

}  // namespace infervisor
