#include "engine/suspend_spec.h"

#include <string>

namespace infervisor {

namespace {

void parse_suspend_method(YamlMap& map, SuspendSpec& spec, ConfigErrors& errors) {
    std::string text;
    if (!map.get_string("method", text)) return;
    if (text == "freeze")
        spec.method = SuspendMethod::freeze;
    else if (text == "vllm-sleep")
        spec.method = SuspendMethod::vllm_sleep;
    else
        errors.add(map.take("method")->Mark(),
                   "unknown suspend method '" + text + "'; expected freeze or vllm-sleep");
}

void parse_suspend_level(YamlMap& map, SuspendSpec& spec, ConfigErrors& errors) {
    std::string text;
    if (!map.get_string("level", text)) return;
    if (text == "1" || text == "2")
        spec.level = text == "1" ? 1 : 2;
    else
        errors.add(map.take("level")->Mark(),
                   "suspend level must be 1 (vLLM moves the weights to CPU memory and drops the "
                   "KV cache) or 2 (drops both), not '" +
                       text + "'");
}

void parse_suspend_gpu(YamlMap& map, SuspendSpec& spec, ConfigErrors& errors) {
    std::string text;
    if (!map.get_string("gpu", text)) return;
    if (text == "release" || text == "keep")
        spec.release_gpu = text == "release";
    else
        errors.add(map.take("gpu")->Mark(),
                   "suspend gpu must be release (the CUDA processes' GPU memory is moved to host "
                   "memory and the GPU freed) or keep, not '" +
                       text + "'");
}

}  // namespace

const char* suspend_method_name(SuspendMethod method) {
    return method == SuspendMethod::vllm_sleep ? "vllm-sleep" : "freeze";
}

void parse_suspend_keys(YamlMap& worker, SuspendSpec& spec, ConfigErrors& errors) {
    auto node = worker.take("suspend");
    if (!node) return;
    YamlMap map(*node, errors, "'suspend'");
    if (!map.valid()) return;
    parse_suspend_method(map, spec, errors);
    parse_suspend_level(map, spec, errors);
    parse_suspend_gpu(map, spec, errors);
    map.finish();
}

}  // namespace infervisor
