#include "engine/vllm_sleep.h"

#include "engine/engine_request.h"
#include "engine/json_answer.h"

namespace infervisor {

namespace {

// A non-200 answer in words. 404 is what a server without the dev
// endpoints answers: the likeliest cause is said.
std::string vllm_error_text(const HttpAnswer& answer) {
    std::string text = "HTTP " + std::to_string(answer.status);
    if (answer.status == 404)
        return text +
               ": the server has no such route (vLLM serves /sleep, /wake_up and /is_sleeping "
               "only with VLLM_SERVER_DEV_MODE=1 in its environment and sleeps only when "
               "started with --enable-sleep-mode)";
    if (answer.status == 401) return text + ": the server wants its --api-key (engine.api_key)";
    if (!answer.body.empty()) text += ": " + shown_text(answer.body);
    return text;
}

}  // namespace

HttpRequest vllm_sleep_request(const EngineSpec& engine, const std::string& bearer, int64_t level) {
    // mode stays vLLM's default (abort): the suspension does not wait for
    // the requests in flight, which would only delay it.
    HttpRequest request =
        engine_request(engine, bearer, "/sleep?level=" + std::to_string(level), kMaxVllmAnswer);
    request.method = "POST";
    return request;
}

HttpRequest vllm_wake_up_request(const EngineSpec& engine, const std::string& bearer) {
    // No tags: weights and KV cache.
    HttpRequest request = engine_request(engine, bearer, "/wake_up", kMaxVllmAnswer);
    request.method = "POST";
    return request;
}

HttpRequest vllm_is_sleeping_request(const EngineSpec& engine, const std::string& bearer) {
    return engine_request(engine, bearer, "/is_sleeping", kMaxVllmAnswer);
}

Result<void> check_vllm_done(const HttpAnswer& answer, const std::string& what) {
    if (!answer.complete) return plain_error(what + ": " + answer.error);
    if (answer.status != 200) return plain_error(what + ": " + vllm_error_text(answer));
    return {};
}

Result<bool> parse_vllm_is_sleeping(const HttpAnswer& answer) {
    const std::string what = "GET /is_sleeping";
    if (auto done = check_vllm_done(answer, what); !done) return done.error();
    auto parsed = parse_json_answer(answer.body);
    if (!parsed) return plain_error(what + ": " + parsed.error().what);
    if (!parsed->is_object()) return plain_error(what + ": the answer is not a JSON object");
    auto it = parsed->find("is_sleeping");
    if (it == parsed->end() || !it->is_boolean())
        return plain_error(what + ": the answer has no boolean \"is_sleeping\"");
    return it->get<bool>();
}

}  // namespace infervisor
