// Ollama's loaded models, as the daemon speaks to the server for the preempt
// ladder's unload (policy/preempt_ladder.h): what is loaded (GET /api/ps)
// and the request that unloads one model (POST /api/generate with an empty
// prompt and keep_alive 0, as `ollama stop` sends it). Pure: requests are
// built and answers parsed; exchanging them is supervise/'s
// (supervise/worker_ollama_unload.h).
//
// Followed: ollama/ollama at fb30760996871fa9460115c753afd2c60d4ab0f7:
//  - server/routes.go PsHandler: 200 {"models": [{"name", "model", "size",
//    "size_vram", "digest", "expires_at", "context_length", ...}]}, name and
//    model both the display name ("llama3.2:latest"), size in bytes;
//  - server/routes.go GenerateHandler: `req.Prompt == "" && req.KeepAlive
//    != nil && req.KeepAlive.Duration == 0` calls sched.expireRunner(m) and
//    answers 200 {"model", "created_at", "response": "", "done": true,
//    "done_reason": "unload"}; an unknown model is 404 {"error": "model 'x'
//    not found"}, a bad body 400 {"error": ...};
//  - server/sched.go expireRunner: the runner is unloaded at once when no
//    request holds it (refCount 0), else when the last one ends — an unload
//    never cuts a request short, and the model may still be listed for a
//    while after the 200;
//  - cmd/cmd.go StopHandler (`ollama stop MODEL`): the same request.
// Ollama has no API key of its own; engine.api_key is sent as a Bearer for
// a proxy in front that wants one.
//
// Contract: answers are untrusted (the worker serves them): bounded before
// they get here (kMaxOllamaAnswer), parsed without deep recursion
// (engine/json_answer.h), every field checked for its type; at most
// kMaxOllamaModels models are taken from a list, and a name must be 1 to
// kMaxOllamaModelName bytes of printable ASCII (it goes back to the server
// in a JSON body, and into the journal).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "engine/engine_spec.h"
#include "probe/http_exchange.h"

namespace infervisor {

inline constexpr size_t kMaxOllamaAnswer = 256 * 1024;
inline constexpr size_t kMaxOllamaModels = 64;
inline constexpr size_t kMaxOllamaModelName = 256;

struct OllamaModel {
    std::string name;              // "llama3.2:latest"
    std::optional<uint64_t> size;  // bytes in memory (RAM and VRAM), if said
    std::optional<uint64_t> size_vram;

    bool operator==(const OllamaModel&) const = default;
};

HttpRequest ollama_ps_request(const EngineSpec& engine, const std::string& bearer);
HttpRequest ollama_unload_request(const EngineSpec& engine, const std::string& bearer,
                                  const std::string& model);

// GET /api/ps's models, or an Error in words ("GET /api/ps: HTTP 404").
Result<std::vector<OllamaModel>> parse_ollama_ps(const HttpAnswer& answer);
// The unload's answer: 200 with "done": true, or an Error in words
// ("unload 'x': HTTP 404: model 'x' not found").
Result<void> check_ollama_unloaded(const HttpAnswer& answer, const std::string& model);

}  // namespace infervisor
