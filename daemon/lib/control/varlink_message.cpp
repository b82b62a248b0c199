#include "control/varlink_message.h"

#include "control/varlink_errors.h"

namespace infervisor {

namespace {

using nlohmann::json;

CallRejected protocol_error(std::string reason) {
    return {std::string(varlink_error::kProtocolError), {{"reason", std::move(reason)}}, true};
}

CallRejected invalid_parameter(std::string name) {
    return {std::string(varlink_error::kInvalidParameter), {{"parameter", std::move(name)}}, false};
}

std::optional<json> parse_object(std::string_view message) {
    if (json_nesting_exceeds(message, kMaxJsonDepth)) return std::nullopt;
    json doc = json::parse(message, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded() || !doc.is_object()) return std::nullopt;
    return doc;
}

// Reads an optional boolean member; false when absent or null.
bool read_flag(const json& doc, const char* key, bool& out) {
    auto it = doc.find(key);
    if (it == doc.end() || it->is_null()) return true;
    if (!it->is_boolean()) return false;
    out = it->get<bool>();
    return true;
}

bool valid_method_name(std::string_view method) {
    auto dot = method.rfind('.');
    return dot != std::string_view::npos && dot > 0 && dot + 1 < method.size();
}

}  // namespace

std::string_view VarlinkCall::interface_name() const {
    std::string_view m = method;
    return m.substr(0, m.rfind('.'));
}

std::string_view VarlinkCall::member_name() const {
    std::string_view m = method;
    return m.substr(m.rfind('.') + 1);
}

ParsedCall parse_call(std::string_view message) {
    auto doc = parse_object(message);
    if (!doc) return protocol_error("message is not a JSON object");
    VarlinkCall call;
    auto method = doc->find("method");
    if (method == doc->end() || !method->is_string())
        return protocol_error("\"method\" is missing or not a string");
    call.method = method->get<std::string>();
    if (!valid_method_name(call.method))
        return protocol_error("\"method\" is not an interface-qualified name");
    if (!read_flag(*doc, "more", call.more)) return protocol_error("\"more\" is not a boolean");
    if (!read_flag(*doc, "oneway", call.oneway))
        return protocol_error("\"oneway\" is not a boolean");
    bool upgrade = false;
    if (!read_flag(*doc, "upgrade", upgrade) || upgrade) return invalid_parameter("upgrade");
    if (call.more && call.oneway) return invalid_parameter("oneway");
    auto params = doc->find("parameters");
    if (params != doc->end() && !params->is_null()) {
        if (!params->is_object()) return invalid_parameter("parameters");
        call.parameters = std::move(*params);
    }
    return call;
}

Result<VarlinkReply> parse_reply(std::string_view message) {
    auto doc = parse_object(message);
    if (!doc) return plain_error("reply is not a JSON object");
    VarlinkReply reply;
    if (auto error = doc->find("error"); error != doc->end()) {
        if (!error->is_string()) return plain_error("reply \"error\" is not a string");
        reply.error = error->get<std::string>();
    }
    if (!read_flag(*doc, "continues", reply.continues))
        return plain_error("reply \"continues\" is not a boolean");
    if (auto params = doc->find("parameters"); params != doc->end() && !params->is_null()) {
        if (!params->is_object()) return plain_error("reply \"parameters\" is not an object");
        reply.parameters = std::move(*params);
    }
    return reply;
}

std::string dump_json(const json& value, int indent) {
    return value.dump(indent, ' ', false, json::error_handler_t::replace);
}

std::string encode_call(const VarlinkCall& call) {
    json doc = {{"method", call.method}};
    if (!call.parameters.empty()) doc["parameters"] = call.parameters;
    if (call.more) doc["more"] = true;
    if (call.oneway) doc["oneway"] = true;
    return dump_json(doc) + '\0';
}

// The envelopes are written around the dumped parameters rather than built
// as a json document, which would deep-copy the parameters (a List reply is
// hundreds of objects).
std::string encode_reply(const json& parameters, bool continues) {
    std::string out = "{\"parameters\":" + dump_json(parameters);
    if (continues) out += ",\"continues\":true";
    out += "}";
    out += '\0';
    return out;
}

std::string encode_error(std::string_view error, const json& parameters) {
    std::string out = "{\"error\":" + dump_json(json(error)) + ",\"parameters\":";
    out += dump_json(parameters);
    out += "}";
    out += '\0';
    return out;
}

bool json_nesting_exceeds(std::string_view text, int limit) {
    int depth = 0;
    bool in_string = false;
    bool escaped = false;
    for (char c : text) {
        if (in_string) {
            if (escaped) {
                escaped = false;
            } else if (c == '\\') {
                escaped = true;
            } else if (c == '"') {
                in_string = false;
            }
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > limit) return true;
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return false;
}

}  // namespace infervisor
