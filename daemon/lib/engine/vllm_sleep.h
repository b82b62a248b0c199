// vLLM's sleep mode, as the daemon speaks it for `suspend: {method:
// vllm-sleep}`: the requests (POST /sleep?level=N, POST /wake_up, GET
// /is_sleeping) and the reading of their answers. Pure: requests are built
// and answers parsed; exchanging them is supervise/'s
// (supervise/worker_vllm_sleep.h, probe/http_exchange.h).
//
// Followed: vllm-project/vllm, vllm/entrypoints/serve/dev/sleep/api_router.py
// at commit e7a47b821ef4 (sleep: level from the query, default "1", and
// mode, default "abort": requests in flight are aborted; wake_up: optional
// repeated `tags` in the query, none = all, i.e. weights and KV cache; both
// answer an empty 200 once the engine has done it; is_sleeping:
// {"is_sleeping": BOOL}) and docs/features/sleep_mode.md. The routes exist
// only when the server runs with VLLM_SERVER_DEV_MODE=1 (dev endpoints) and
// the engine only sleeps when started with --enable-sleep-mode; without
// them the server answers FastAPI's 404 {"detail":"Not Found"}. vLLM's
// --api-key (its AuthenticationMiddleware) guards only the /v1 routes: these
// admin endpoints are open to whoever reaches the port, so the server must
// listen on localhost. The bearer (engine.api_key) is sent all the same: a
// proxy in front may want it, and vLLM ignores it here.
//
//   POST /sleep?level=1   -> 200 (empty body)
//   POST /wake_up         -> 200 (empty body)
//   GET  /is_sleeping     -> 200 {"is_sleeping": true}
//
// Contract: answers are untrusted (the worker serves them): bounded before
// they get here (kMaxVllmAnswer), parsed without deep recursion
// (engine/json_answer.h), the field checked for its type; an answer that is
// not as above is an error saying what is wrong.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/result.h"
#include "engine/engine_spec.h"
#include "probe/http_exchange.h"

namespace infervisor {

inline constexpr size_t kMaxVllmAnswer = 16 * 1024;

// `bearer`: the server's --api-key, or empty. `level`: 1 or 2.
HttpRequest vllm_sleep_request(const EngineSpec& engine, const std::string& bearer, int64_t level);
HttpRequest vllm_wake_up_request(const EngineSpec& engine, const std::string& bearer);
HttpRequest vllm_is_sleeping_request(const EngineSpec& engine, const std::string& bearer);

// A POST /sleep or /wake_up answer: done (200), or an Error in words
// ("POST /sleep: HTTP 404: the server has no such route; ...").
Result<void> check_vllm_done(const HttpAnswer& answer, const std::string& what);
// GET /is_sleeping's value.
Result<bool> parse_vllm_is_sleeping(const HttpAnswer& answer);

}  // namespace infervisor
