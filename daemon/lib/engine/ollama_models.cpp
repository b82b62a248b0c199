#include "engine/ollama_models.h"

#include <nlohmann/json.hpp>

#include "engine/engine_request.h"
#include "engine/json_answer.h"

namespace infervisor {

namespace {

using nlohmann::json;

// A non-200 answer in words: Ollama says why in {"error": "..."}.
std::string ollama_error_text(const HttpAnswer& answer) {
    std::string text = "HTTP " + std::to_string(answer.status);
    if (auto parsed = parse_json_answer(answer.body); parsed && parsed->is_object())
        if (auto error = string_field(*parsed, "error")) return text + ": " + shown_text(*error);
    if (answer.status == 404)
        return text + ": no such route (is this an Ollama server? engine.kind: ollama)";
    if (!answer.body.empty()) text += ": " + shown_text(answer.body);
    return text;
}

Result<json> ollama_ok_json(const HttpAnswer& answer, const std::string& what) {
    if (!answer.complete) return plain_error(what + ": " + answer.error);
    if (answer.status != 200) return plain_error(what + ": " + ollama_error_text(answer));
    auto parsed = parse_json_answer(answer.body);
    if (!parsed) return plain_error(what + ": " + parsed.error().what);
    if (!parsed->is_object()) return plain_error(what + ": the answer is not a JSON object");
    return std::move(*parsed);
}

bool acceptable_name(const std::string& name) {
    if (name.empty() || name.size() > kMaxOllamaModelName) return false;
    for (char c : name)
        if (static_cast<unsigned char>(c) < 0x21 || static_cast<unsigned char>(c) > 0x7e)
            return false;
    return true;
}

std::optional<uint64_t> byte_count(const json& object, const char* key) {
    auto n = int_field(object, key);
    if (!n || *n < 0) return std::nullopt;
    return static_cast<uint64_t>(*n);
}

}  // namespace

HttpRequest ollama_ps_request(const EngineSpec& engine, const std::string& bearer) {
    return engine_request(engine, bearer, "/api/ps", kMaxOllamaAnswer);
}

HttpRequest ollama_unload_request(const EngineSpec& engine, const std::string& bearer,
                                  const std::string& model) {
    HttpRequest request = engine_request(engine, bearer, "/api/generate", kMaxOllamaAnswer);
    request.method = "POST";
    request.headers.emplace_back("Content-Type", "application/json");
    // An empty prompt with keep_alive 0: GenerateHandler's unload branch.
    // stream false: one JSON object, not NDJSON (the unload branch answers
    // one object either way).
    request.body = json{{"model", model}, {"keep_alive", 0}, {"stream", false}}.dump();
    return request;
}

Result<std::vector<OllamaModel>> parse_ollama_ps(const HttpAnswer& answer) {
    const std::string what = "GET /api/ps";
    auto parsed = ollama_ok_json(answer, what);
    if (!parsed) return parsed.error();
    const json* models = nullptr;
    if (auto it = parsed->find("models"); it != parsed->end()) models = &*it;
    // Ollama writes `[]` for none; a null is read as none too.
    if (!models || models->is_null()) return std::vector<OllamaModel>{};
    if (!models->is_array()) return plain_error(what + ": \"models\" is not a list");
    if (models->size() > kMaxOllamaModels)
        return plain_error(what + ": " + std::to_string(models->size()) +
                           " models listed, more than " + std::to_string(kMaxOllamaModels));
    std::vector<OllamaModel> out;
    for (const json& m : *models) {
        if (!m.is_object()) return plain_error(what + ": a model is not a JSON object");
        auto name = string_field(m, "name");
        if (!name) name = string_field(m, "model");
        if (!name || !acceptable_name(*name))
            return plain_error(what + ": a model without a usable name (1-" +
                               std::to_string(kMaxOllamaModelName) + " printable characters)");
        out.push_back({*name, byte_count(m, "size"), byte_count(m, "size_vram")});
    }
    return out;
}

Result<void> check_ollama_unloaded(const HttpAnswer& answer, const std::string& model) {
    const std::string what = "unload '" + shown_text(model) + "'";
    auto parsed = ollama_ok_json(answer, what);
    if (!parsed) return parsed.error();
    auto done = parsed->find("done");
    if (done == parsed->end() || !done->is_boolean() || !done->get<bool>())
        return plain_error(what + ": the answer does not say \"done\": true");
    return {};
}

}  // namespace infervisor
