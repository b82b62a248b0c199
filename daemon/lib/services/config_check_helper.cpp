#include "services/config_check_helper.h"

#include "config/config_check_protocol.h"

namespace infervisor {

LoadedConfig check_config_in_helper(const ConfigTexts& texts, const HelperIdentity& caller,
                                    const ConfigCheckHelper& helper,
                                    std::optional<std::vector<GpuDevice>> gpus) {
    HelperRequest request;
    request.argv = {helper.program, kHelperModeFlag, kConfigCheckHelper};
    request.environment = helper.environment;
    request.input = encode_config_check_request({texts, std::move(gpus)});
    request.identity = caller;
    request.memory_limit = helper.memory_limit;
    request.deadline = helper.deadline;
    request.max_output = ConfigCheckHelper::kMaxReply;
    HelperResult result = run_helper(request);

    LoadedConfig out;
    if (!result.ok()) {
        out.not_checked = "the check " + result.describe(request);
        return out;
    }
    auto errors = decode_config_check_reply(result.output);
    if (!errors) {
        out.not_checked = "the check's helper gave no answer that could be read";
        return out;
    }
    out.errors = std::move(*errors);
    return out;
}

}  // namespace infervisor
