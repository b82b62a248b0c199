// EngineSpec: how the daemon reaches the inference server a worker runs —
// the `engine:` key of a worker (or of `defaults:`):
//
//   engine:
//     kind: llama-server   # llama-server, vllm, ollama or generic
//     port: 8080           # required
//     host: 127.0.0.1      # an IP literal (default 127.0.0.1; no name lookup)
//     tls: false           # https (no certificate verification, as the probes)
//     api_key: llama_key   # a key of the worker's `credentials:`, sent as
//                          # "Authorization: Bearer ..." (llama-server's
//                          # --api-key, vLLM's --api-key)
//     metrics: /metrics    # scraped at every sample when set: engine.* in rules
//     timeout: 2s          # each request to the server (default 2s; a slot
//                          # save has checkpoint.timeout instead; a vLLM
//                          # sleep or wake, both its requests, this)
//
// The engine adapters use it: `checkpoint: {method: llama-server}` saves and
// restores llama-server's slots, `suspend: {method: vllm-sleep}` puts vLLM to
// sleep before freezing it, and the metrics scrape feeds `engine.NAME` and
// `engine.rate(NAME)` to the worker's rules. Plain data; equality is part of
// WorkerSpec's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "yaml/config_errors.h"
#include "yaml/yaml_map.h"

namespace infervisor {

using namespace std::chrono_literals;

enum class EngineKind { llama_server, vllm, ollama, generic };

std::string_view engine_kind_name(EngineKind kind);  // "llama-server", "vllm", ...

struct EngineSpec {
    EngineKind kind = EngineKind::generic;
    std::string host = "127.0.0.1";
    int64_t port = 0;
    bool tls = false;
    std::string api_key;                 // a credential's NAME, or empty
    std::optional<std::string> metrics;  // the request target scraped, e.g. "/metrics"
    Duration timeout = 2s;

    bool operator==(const EngineSpec&) const = default;
};

// Claims exactly the key `engine` of `worker` (a worker's or the defaults'
// mapping) and reports every bad value where it stands in the file.
void parse_engine_keys(YamlMap& worker, std::optional<EngineSpec>& spec, ConfigErrors& errors);

}  // namespace infervisor
