#include "engine/engine_request.h"

#include <utility>

namespace infervisor {

HttpRequest engine_request(const EngineSpec& engine, const std::string& bearer, std::string target,
                           size_t max_body) {
    HttpRequest request;
    request.host = engine.host;
    request.port = engine.port;
    request.tls = engine.tls;
    request.target = std::move(target);
    request.max_body = max_body;
    // llama-server's middleware_validate_api_key and vLLM's --api-key check
    // both read "Authorization: Bearer KEY".
    if (!bearer.empty()) request.headers.emplace_back("Authorization", "Bearer " + bearer);
    return request;
}

}  // namespace infervisor
