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
#include <vector>

#include "config/config_loader.h"
#include "gpu/gpu_snapshot.h"
#include "yaml/config_errors.h"

namespace infervisor {

inline constexpr const char* kConfigCheckHelper = "config-check";

// The helper's main: reads `in`, writes `out`; 0 when an answer was written.
int config_check_helper_main(int in_fd, int out_fd);

struct ConfigCheckRequest {
    ConfigTexts texts;
    // The daemon's GPUs at the request (gpu.devices naming one it lacks is
    // a warning, config_validator.h); nullopt: not known.
    std::optional<std::vector<GpuDevice>> gpus;
};

// {"main": {"file","text"}, "dropins": [{"file","text"}...], "gpus":
// [{"index","vendor","name","uuid","pci","fault"}...]} ("gpus" only when
// known)
std::string encode_config_check_request(const ConfigCheckRequest& request);
// nullopt: not a request of this shape.
std::optional<ConfigCheckRequest> decode_config_check_request(std::string_view request);

std::string encode_config_check_reply(const ConfigErrors& errors);
// nullopt: not a reply of this shape (a broken or hostile helper).
std::optional<ConfigErrors> decode_config_check_reply(std::string_view reply);

}  // namespace infervisor
