// Checks of a worker's `credentials:` (NAME -> source file), shared by the
// configuration check and the code that installs them (supervise/
// worker_credentials.h).
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace infervisor {

inline constexpr size_t kMaxCredentialSize = 1 << 20;
inline constexpr size_t kMaxCredentials = 64;

// A credential name: 1-64 of [A-Za-z0-9_.-], not starting with '.'.
bool is_valid_credential_name(std::string_view name);

// Why `source` cannot be a credential file now (relative, missing, not a
// regular file, too large), or empty. The path is stat()ed with the rights
// of the process that calls this. `as_caller`: it runs with the rights of
// an unprivileged caller (a config-check helper, process/helper_process.h),
// for whom "permission denied" says nothing about the file: then that is
// not a problem (the daemon checks again, as root, when it loads the file).
std::string credential_source_problem(const std::filesystem::path& source, bool as_caller = false);

}  // namespace infervisor
