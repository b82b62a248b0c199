#include "engine/llama_slots.h"

#include <nlohmann/json.hpp>

#include "engine/engine_request.h"
#include "engine/json_answer.h"

namespace infervisor {

namespace {

using nlohmann::json;

const char* action_name(SlotAction action) {
    switch (action) {
        case SlotAction::save:
            return "save";
        case SlotAction::restore:
            return "restore";
        case SlotAction::erase:
            return "erase";
    }
    return "?";
}

// A 200 answer's JSON, else the error it is.
Result<json> ok_json(const HttpAnswer& answer, const std::string& what) {
    if (!answer.complete) return plain_error(what + ": " + answer.error);
    if (answer.status != 200) return plain_error(what + ": " + llama_error_text(answer));
    auto parsed = parse_json_answer(answer.body);
    if (!parsed) return plain_error(what + ": " + parsed.error().what);
    return std::move(*parsed);
}

}  // namespace

std::string llama_slot_file_name(int64_t id) { return "slot-" + std::to_string(id) + ".bin"; }

HttpRequest llama_props_request(const EngineSpec& engine, const std::string& bearer) {
    return engine_request(engine, bearer, "/props", kMaxLlamaAnswer);
}

HttpRequest llama_slots_request(const EngineSpec& engine, const std::string& bearer) {
    return engine_request(engine, bearer, "/slots", kMaxLlamaAnswer);
}

HttpRequest llama_slot_action_request(const EngineSpec& engine, const std::string& bearer,
                                      int64_t slot, SlotAction action,
                                      const std::string& filename) {
    HttpRequest request = engine_request(
        engine, bearer, "/slots/" + std::to_string(slot) + "?action=" + action_name(action),
        kMaxLlamaAnswer);
    request.method = "POST";
    // post_slots reads the id from the path (/slots/:id_slot) and the action
    // from the query; save and restore read {"filename"} from the body
    // (json::parse(req.body): an empty body is an exception there, so erase
    // gets "{}" too).
    request.headers.emplace_back("Content-Type", "application/json");
    request.body = action == SlotAction::erase ? "{}" : json{{"filename", filename}}.dump();
    return request;
}

Result<LlamaProps> parse_llama_props(const HttpAnswer& answer) {
    auto j = ok_json(answer, "GET /props");
    if (!j) return j.error();
    if (!j->is_object()) return plain_error("GET /props: the answer is not a JSON object");
    LlamaProps props;
    auto path = string_field(*j, "model_path");
    if (!path || path->empty()) return plain_error("GET /props: no \"model_path\" string");
    props.model_path = *path;
    props.build_info = string_field(*j, "build_info").value_or("");
    const json* settings = object_field(*j, "default_generation_settings");
    auto n_ctx = settings ? int_field(*settings, "n_ctx") : std::nullopt;
    if (!n_ctx || *n_ctx <= 0)
        return plain_error("GET /props: no positive \"default_generation_settings.n_ctx\"");
    props.n_ctx = *n_ctx;
    props.total_slots = int_field(*j, "total_slots");
    return props;
}

Result<std::vector<LlamaSlot>> parse_llama_slots(const HttpAnswer& answer) {
    auto j = ok_json(answer, "GET /slots");
    if (!j) return j.error();
    if (!j->is_array()) return plain_error("GET /slots: the answer is not a JSON array");
    if (j->size() > kMaxLlamaSlots)
        return plain_error("GET /slots: " + std::to_string(j->size()) + " slots, more than " +
                           std::to_string(kMaxLlamaSlots));
    std::vector<LlamaSlot> slots;
    for (const json& entry : *j) {
        auto id = entry.is_object() ? int_field(entry, "id") : std::nullopt;
        if (!id || *id < 0 || *id >= int64_t(kMaxLlamaSlots))
            return plain_error("GET /slots: slot " + std::to_string(slots.size()) +
                               " has no \"id\" from 0 to " + std::to_string(kMaxLlamaSlots - 1));
        for (const auto& seen : slots)
            if (seen.id == *id)
                return plain_error("GET /slots: slot id " + std::to_string(*id) + " listed twice");
        LlamaSlot slot{*id, int_field(entry, "n_ctx").value_or(0), false};
        if (auto it = entry.find("is_processing"); it != entry.end() && it->is_boolean())
            slot.is_processing = it->get<bool>();
        slots.push_back(slot);
    }
    return slots;
}

Result<LlamaSlotResult> parse_llama_slot_result(const HttpAnswer& answer, SlotAction action) {
    std::string what = std::string("POST /slots ") + action_name(action);
    auto j = ok_json(answer, what);
    if (!j) return j.error();
    if (!j->is_object()) return plain_error(what + ": the answer is not a JSON object");
    LlamaSlotResult result;
    auto id = int_field(*j, "id_slot");
    if (!id) return plain_error(what + ": no \"id_slot\"");
    result.id_slot = *id;
    const char* tokens_key = action == SlotAction::save      ? "n_saved"
                             : action == SlotAction::restore ? "n_restored"
                                                             : "n_erased";
    auto tokens = int_field(*j, tokens_key);
    if (!tokens || *tokens < 0)
        return plain_error(what + ": no count \"" + tokens_key + "\" in the answer");
    result.tokens = uint64_t(*tokens);
    if (action == SlotAction::erase) return result;
    auto file = string_field(*j, "filename");
    if (!file) return plain_error(what + ": no \"filename\" in the answer");
    result.filename = *file;
    auto bytes = int_field(*j, action == SlotAction::save ? "n_written" : "n_read");
    if (!bytes || *bytes < 0)
        return plain_error(what + ": no count \"" +
                           (action == SlotAction::save ? "n_written" : "n_read") +
                           "\" in the answer");
    result.bytes = uint64_t(*bytes);
    return result;
}

std::string llama_error_text(const HttpAnswer& answer) {
    if (!answer.complete) return answer.error;
    std::string out = "HTTP " + std::to_string(answer.status);
    // format_error_response's shape; anything else (the exception handler's
    // text/plain 500) is shown as text.
    std::string message;
    if (auto j = parse_json_answer(answer.body); j && j->is_object()) {
        if (const json* error = object_field(*j, "error")) {
            if (auto type = string_field(*error, "type")) out += " (" + shown_text(*type) + ")";
            message = string_field(*error, "message").value_or("");
        }
    } else {
        message = answer.body;
    }
    if (!message.empty()) out += ": " + shown_text(message);
    return out;
}

}  // namespace infervisor
