// The one place an HTTP request to a worker's inference server is built:
// where (engine.host, engine.port, engine.tls), how much of the answer is
// read, and the worker's API key as llama-server's and vLLM's middleware
// want it ("Authorization: Bearer KEY"). The adapters set the method, the
// target and the body.
#pragma once

#include <cstddef>
#include <string>

#include "engine/engine_spec.h"
#include "probe/http_exchange.h"

namespace infervisor {

// A GET of `target`, reading at most `max_body` bytes of the answer. An
// empty `bearer` sends no Authorization header.
HttpRequest engine_request(const EngineSpec& engine, const std::string& bearer, std::string target,
                           size_t max_body);

}  // namespace infervisor
