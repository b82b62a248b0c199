#include "engine/engine_spec.h"

#include "probe/http_target.h"

namespace infervisor {

namespace {

constexpr EngineKind kEngineKinds[] = {EngineKind::llama_server, EngineKind::vllm,
                                       EngineKind::ollama, EngineKind::generic};

// A request to a local server that takes longer than this is a hung server.
constexpr Duration kMaxEngineTimeout = 10min;

void parse_kind(YamlMap& map, EngineSpec& spec, ConfigErrors& errors) {
    std::string text;
    if (!map.get_string("kind", text)) return;
    for (EngineKind kind : kEngineKinds)
        if (text == engine_kind_name(kind)) {
            spec.kind = kind;
            return;
        }
    errors.add(map.take("kind")->Mark(),
               "engine kind must be llama-server, vllm, ollama or generic, not '" + text + "'");
}

void parse_host(YamlMap& map, EngineSpec& spec, ConfigErrors& errors) {
    std::string text;
    if (!map.get_string("host", text)) return;
    if (is_ip_literal(text))
        spec.host = text;
    else
        errors.add(map.take("host")->Mark(),
                   "engine 'host' must be an IP address such as 127.0.0.1 or ::1 (no name "
                   "lookup), not '" +
                       text + "'");
}

void parse_metrics(YamlMap& map, EngineSpec& spec, ConfigErrors& errors) {
    std::string text;
    if (!map.get_string("metrics", text)) return;
    if (is_request_target(text))
        spec.metrics = text;
    else
        errors.add(map.take("metrics")->Mark(),
                   "engine 'metrics' must be a path starting with '/' (no spaces, control or "
                   "non-ASCII characters, at most " +
                       std::to_string(kMaxRequestTarget) + "), such as /metrics, not '" + text +
                       "'");
}

void parse_timeout(YamlMap& map, EngineSpec& spec, ConfigErrors& errors) {
    Duration timeout = spec.timeout;
    if (!map.get_duration("timeout", timeout, Required::no, kMaxEngineTimeout)) return;
    if (timeout.count() > 0)
        spec.timeout = timeout;
    else
        errors.add(map.take("timeout")->Mark(), "engine 'timeout' must be above 0s");
}

void parse_fields(YamlMap& map, EngineSpec& spec, ConfigErrors& errors) {
    parse_kind(map, spec, errors);
    parse_host(map, spec, errors);
    map.get_int("port", spec.port, 1, 65535);
    map.get_bool("tls", spec.tls);
    map.get_string("api_key", spec.api_key);  // a credential's name: checked per worker
    parse_metrics(map, spec, errors);
    parse_timeout(map, spec, errors);
}

}  // namespace

std::string_view engine_kind_name(EngineKind kind) {
    switch (kind) {
        case EngineKind::llama_server:
            return "llama-server";
        case EngineKind::vllm:
            return "vllm";
        case EngineKind::ollama:
            return "ollama";
        case EngineKind::generic:
            return "generic";
    }
    return "generic";
}

void parse_engine_keys(YamlMap& worker, std::optional<EngineSpec>& spec, ConfigErrors& errors) {
    auto node = worker.take("engine");
    if (!node) return;
    if (node->IsScalar() && node->Scalar() == "none") {  // drops one inherited from defaults
        spec.reset();
        return;
    }
    // Over what `defaults:` gave: a worker may add its port to a shared engine block.
    EngineSpec merged = spec.value_or(EngineSpec{});
    YamlMap map(*node, errors, "'engine'");
    if (!map.valid()) return;
    parse_fields(map, merged, errors);
    map.finish();
    spec = std::move(merged);
}

}  // namespace infervisor
