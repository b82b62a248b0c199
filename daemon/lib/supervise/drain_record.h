// DrainRecord: that the host is drained (infervisorctl drain), kept in
// <runtime_dir>/drained so that a daemon restarted while drained stays
// drained, and a reboot (the runtime dir is a tmpfs) ends it: a host drained
// to be rebooted comes back serving. It names the workers that were up when
// the drain began: `undrain` starts those again.
//
//   infervisor-drained 1
//   up llama
//   up embedder
//
// Written to a temporary file and renamed; read back trusting nothing (a
// bad line, an unknown version or a name that is not a worker name makes it
// unreadable, which the caller reports and treats as drained with no names:
// the safe side of a damaged record is that nothing starts by itself).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace infervisor {

inline constexpr size_t kMaxDrainRecordSize = 64 * 1024;

std::string format_drain_record(const std::vector<std::string>& were_up);
Result<std::vector<std::string>> parse_drain_record(std::string_view text);

// <runtime_dir>/drained.
std::filesystem::path drain_record_path(const std::filesystem::path& runtime_dir);
Result<void> write_drain_record(const std::filesystem::path& runtime_dir,
                                const std::vector<std::string>& were_up);
// Empty when the host is not drained (no record).
std::optional<Result<std::vector<std::string>>> read_drain_record(
    const std::filesystem::path& runtime_dir);
Result<void> remove_drain_record(const std::filesystem::path& runtime_dir);

}  // namespace infervisor
