// The config-check helper: `infervisorctl config check` text is parsed and
// validated in a short-lived helper process (process/helper_process.h), not
// in the daemon. This is both ends of its conversation.
//
// The helper (`infervisord --internal-helper config-check`, running with
// the caller's uid, gid and groups, under a memory limit) reads one JSON
// object from stdin, the configuration's texts (encode_config_check_request;
// at most config_limits::kMaxTotalBytes of it, more is an error), checks
// them as the daemon checks its own files, and writes one JSON object to
// stdout:
// {"errors": [{"file","line","column","message"}...], "dropped": N,
// "warnings": [...]}: the kept errors, the count of those not kept and the
// warnings, of the same shape (yaml/config_errors.h). A
// helper run by an unprivileged caller checks with ValidationOptions::
// as_caller (it sees what that user may see; nothing more).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "config/config_loader.h"
#include "yaml/config_errors.h"

namespace infervisor {

inline constexpr const char* kConfigCheckHelper = "config-check";

// The helper's main: reads `in`, writes `out`; 0 when an answer was written.
int config_check_helper_main(int in_fd, int out_fd);

// {"main": {"file","text"}, "dropins": [{"file","text"}...]}
std::string encode_config_check_request(const ConfigTexts& texts);
// nullopt: not a request of this shape.
std::optional<ConfigTexts> decode_config_check_request(std::string_view request);

std::string encode_config_check_reply(const ConfigErrors& errors);
// nullopt: not a reply of this shape (a broken or hostile helper).
std::optional<ConfigErrors> decode_config_check_reply(std::string_view reply);

}  // namespace infervisor
