// SuspendSpec: how a worker is suspended — the `suspend:` key of a worker
// (or of `defaults:`), spelled as `checkpoint: {method: ...}` is:
//
//   suspend:
//     method: vllm-sleep   # freeze (default) or vllm-sleep
//     level: 1             # vllm-sleep: 1 (weights to CPU RAM, KV cache
//                          # dropped; default) or 2 (both dropped)
//     gpu: release         # freeze: release (default) or keep
//
// freeze: the cgroup is frozen and its memory reclaimed
// (supervise/worker_suspension.h). vllm-sleep: the worker's vLLM server
// (its `engine:`, kind vllm) is first put to sleep (POST /sleep?level=N,
// engine/vllm_sleep.h), which frees its GPU memory, then frozen and
// reclaimed as with freeze; a resume thaws it and then wakes it.
// gpu: release (with freeze): a worker whose processes hold NVIDIA GPU
// memory has it moved into their host memory and the GPU freed first
// (supervise/worker_gpu_release.h), and back after the thaw; keep: the
// GPU memory stays held while it is frozen.
//
// Contract: parse_suspend_keys claims exactly the key `suspend` of the
// worker's (or the defaults') mapping and reports every bad value where it
// stands in the file; whether the engine fits the method is the validator's
// (config/config_validator.cpp). Plain data; equality is part of WorkerSpec's.
#pragma once

#include <cstdint>

#include "yaml/config_errors.h"
#include "yaml/yaml_map.h"

namespace infervisor {

enum class SuspendMethod { freeze, vllm_sleep };

// "freeze", "vllm-sleep": as the configuration spells it.
const char* suspend_method_name(SuspendMethod method);

struct SuspendSpec {
    SuspendMethod method = SuspendMethod::freeze;
    int64_t level = 1;        // vllm-sleep's /sleep?level=
    bool release_gpu = true;  // gpu: release (freeze only)

    bool operator==(const SuspendSpec&) const = default;
};

void parse_suspend_keys(YamlMap& worker, SuspendSpec& spec, ConfigErrors& errors);

}  // namespace infervisor
