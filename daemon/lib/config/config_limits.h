// ConfigLimits: how much configuration the daemon accepts, so that no
// configuration text — above all one sent by any local user to `Validate`
// (`infervisorctl config check`) — can cost unbounded time or memory.
// infervisor.yaml(5) lists these limits (LIMITS); an input over one is an
// error naming the limit and where it was exceeded, never a silent cut.
//
// The numbers are far above what a real host needs (a host runs a handful of
// inference workers, not a thousand) and low enough that parsing and
// validating the largest accepted configuration stays well under a second
// and a few hundred MiB on the background thread that does it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace infervisor::config_limits {

// Bytes of one configuration file (the main file, each drop-in, the text
// sent to Validate) and of all files of one configuration together.
inline constexpr std::size_t kMaxFileBytes = 1 << 20;
inline constexpr std::size_t kMaxTotalBytes = 8 << 20;
// Files in the workers directory.
inline constexpr std::size_t kMaxDropinFiles = 1024;
// Workers in one configuration (all files together).
inline constexpr std::size_t kMaxWorkers = 1024;
// Per worker.
inline constexpr std::size_t kMaxSupplementaryGroups = 64;
inline constexpr std::size_t kMaxEnvironment = 1024;
inline constexpr std::size_t kMaxCommandArgs = 1024;
// Sizes, durations, error counts and YAML expansion are limited one layer
// down, in yaml/ (yaml_map.h, config_errors.h, document_budget.h); extra
// dirs in workdir/workdir_config.h, rules in policy/rule_config.h.

// Distinct user and group names looked up (NSS) in one validation: each
// lookup of an unknown name may read /etc/group or ask a directory service.
inline constexpr std::size_t kMaxAccountLookups = 256;

}  // namespace infervisor::config_limits
