// Textfile output for node_exporter's textfile collector
// (--collector.textfile.directory, /var/lib/prometheus/node-exporter on
// Debian): the whole exposition is written to PATH.tmp and renamed over PATH,
// so the collector never reads half a file. The temporary file is created
// anew (O_EXCL, O_NOFOLLOW) after removing a stale one, so a link planted at
// its name is never followed; rename() replaces PATH itself, never what a
// link there points to. Its mode is 0644 whatever the umask: the daemon's
// unit has UMask=0077, and node_exporter (user prometheus) must read it, so
// the mode is set on the descriptor (fchmod), not left to open().
#pragma once

#include <filesystem>
#include <string_view>

#include "base/result.h"

namespace infervisor {

Result<void> write_textfile_atomically(const std::filesystem::path& path, std::string_view text);

}  // namespace infervisor
