// Credentials: secrets passed to a worker as files, not in its environment
// (systemd's LoadCredential= is the model). The environment is readable
// through /proc/PID/environ by anyone who may ptrace the worker, shows up in
// `infervisorctl show`, and is inherited by every child; a file in a
// directory only the worker can read is none of these.
//
// Contract: before each start, the daemon (root) reads each configured source
// file (a regular file, at most kMaxCredentialSize bytes) and writes it to
// <runtime_dir>/credentials/WORKER/NAME, replacing what an earlier run had
// there. Each file is the worker's uid's with mode 0400 (group root), in a
// directory that is root's with mode 0711: the worker reads its credentials
// by name and can neither change them nor add files; no other uid can read
// them, whatever the worker's group. Not its group's: `group:` may name a
// group others are in (render, video), and a named user's primary group is
// shared by its members (issue 26, defect 5: they were root:GROUP 0440).
// The directory cannot be listed (systemd's services read credentials by
// name too); a directory the worker owned would let it write into /run.
// The worker learns the directory from CREDENTIALS_DIRECTORY. The directory
// is removed when the run ends. The parent <runtime_dir>/credentials is
// root's, 0711.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <string>

#include "base/paths.h"
#include "base/result.h"
#include "config/credential_checks.h"

namespace infervisor {

// <runtime_dir>/credentials/WORKER
std::filesystem::path credentials_dir(const Paths& paths, const std::string& worker);

// Writes the worker's credentials (NAME -> source file) and returns the
// directory; with none configured, removes any left over and returns "".
Result<std::filesystem::path> install_credentials(
    const Paths& paths, const std::string& worker,
    const std::map<std::string, std::filesystem::path>& credentials, uid_t uid);

// One credential's source file (the configuration's path, root's choice),
// read as install_credentials() reads it (a regular file of at most
// kMaxCredentialSize bytes), for a secret the daemon itself sends: an
// engine's api_key (engine/engine_spec.h). Trailing whitespace (the newline
// an editor adds) is not part of the secret.
Result<std::string> read_credential_secret(const std::filesystem::path& source);

// Removes the worker's credentials directory (absent is fine).
Result<void> remove_credentials(const Paths& paths, const std::string& worker);

}  // namespace infervisor
