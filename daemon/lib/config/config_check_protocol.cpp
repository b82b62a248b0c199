#include "config/config_check_protocol.h"

#include <unistd.h>

#include <cerrno>
#include <nlohmann/json.hpp>

#include "base/file_io.h"
#include "config/config_limits.h"
#include "config/config_loader.h"

namespace infervisor {

namespace {

using nlohmann::json;

// Reads up to `limit` + 1 bytes, so that an over-long text is seen as such.
std::optional<std::string> read_bounded(int fd, std::size_t limit) {
    std::string text;
    char buffer[65536];
    while (text.size() <= limit) {
        ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return std::nullopt;
        if (n == 0) break;
        text.append(buffer, static_cast<std::size_t>(n));
    }
    return text;
}

}  // namespace

int config_check_helper_main(int in_fd, int out_fd) {
    // The texts' limit, and room for the daemon's list of GPUs beside them.
    constexpr std::size_t kMaxRequest = config_limits::kMaxTotalBytes + (std::size_t{256} << 10);
    auto request = read_bounded(in_fd, kMaxRequest);
    if (!request || request->size() > kMaxRequest) return 1;
    auto decoded = decode_config_check_request(*request);
    if (!decoded) return 1;
    request.reset();  // its memory back before the check
    ValidationOptions options;
    options.as_caller = ::geteuid() != 0;
    if (decoded->gpus) options.host_gpus = &*decoded->gpus;
    // Texts over a limit are refused by load_config_texts itself.
    auto loaded = load_config_texts(decoded->texts, options);
    return write_all(out_fd, encode_config_check_reply(loaded.errors)) ? 0 : 1;
}

namespace {

json to_json(const ConfigText& text) { return {{"file", text.file}, {"text", text.text}}; }

std::optional<ConfigText> text_from(const json& j) {
    if (!j.is_object() || j.size() != 2 || !j.value("file", json()).is_string() ||
        !j.value("text", json()).is_string())
        return std::nullopt;
    return ConfigText{j["file"].get<std::string>(), j["text"].get<std::string>()};
}

// The fields a check needs (gpu/gpu_assignment.h find_gpu, describe_gpus).
json to_json(const GpuDevice& d) {
    return {{"index", d.index}, {"vendor", d.vendor},  {"name", d.name},
            {"uuid", d.uuid},   {"pci", d.pci_bus_id}, {"fault", d.fault}};
}

std::optional<GpuDevice> gpu_from(const json& j) {
    if (!j.is_object() || !j.value("index", json()).is_number_unsigned()) return std::nullopt;
    GpuDevice d;
    d.index = j["index"].get<unsigned>();
    for (auto [key, field] :
         {std::pair{"vendor", &d.vendor}, std::pair{"name", &d.name}, std::pair{"uuid", &d.uuid},
          std::pair{"pci", &d.pci_bus_id}, std::pair{"fault", &d.fault}}) {
        if (!j.value(key, json()).is_string()) return std::nullopt;
        *field = j[key].get<std::string>();
    }
    return d;
}

// A host has at most a few dozen GPUs; more is no request of ours.
constexpr std::size_t kMaxGpus = 256;

}  // namespace

std::string encode_config_check_request(const ConfigCheckRequest& request) {
    const ConfigTexts& texts = request.texts;
    json dropins = json::array();
    for (const auto& d : texts.dropins) dropins.push_back(to_json(d));
    json out{{"main", to_json(texts.main)}, {"dropins", std::move(dropins)}};
    if (request.gpus) {
        json gpus = json::array();
        for (const auto& d : *request.gpus) gpus.push_back(to_json(d));
        out["gpus"] = std::move(gpus);
    }
    return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::optional<ConfigCheckRequest> decode_config_check_request(std::string_view request) {
    json parsed = json::parse(request, nullptr, false);
    if (!parsed.is_object() || !parsed.contains("main") || !parsed.contains("dropins") ||
        !parsed["dropins"].is_array())
        return std::nullopt;
    auto main = text_from(parsed["main"]);
    if (!main) return std::nullopt;
    ConfigTexts texts{std::move(*main), {}};
    for (const auto& d : parsed["dropins"]) {
        auto dropin = text_from(d);
        if (!dropin) return std::nullopt;
        texts.dropins.push_back(std::move(*dropin));
    }
    ConfigCheckRequest out{std::move(texts), std::nullopt};
    if (!parsed.contains("gpus")) return out;
    const json& gpus = parsed["gpus"];
    if (!gpus.is_array() || gpus.size() > kMaxGpus) return std::nullopt;
    out.gpus.emplace();
    for (const auto& g : gpus) {
        auto device = gpu_from(g);
        if (!device) return std::nullopt;
        out.gpus->push_back(std::move(*device));
    }
    return out;
}

namespace {

json to_json(const std::vector<ConfigError>& list) {
    json out = json::array();
    for (const auto& e : list)
        out.push_back(
            {{"file", e.file}, {"line", e.line}, {"column", e.column}, {"message", e.message}});
    return out;
}

// Calls add(file, line, column, message) for each entry; false when `list`
// is not a list of such entries (or holds more than `most`).
template <typename Add>
bool read_placed(const json& list, std::size_t most, Add add) {
    if (!list.is_array() || list.size() > most) return false;
    for (const auto& e : list) {
        if (!e.is_object() || !e.value("file", json()).is_string() ||
            !e.value("line", json()).is_number_integer() ||
            !e.value("column", json()).is_number_integer() ||
            !e.value("message", json()).is_string())
            return false;
        add(e["file"].get<std::string>(), e["line"].get<int>(), e["column"].get<int>(),
            e["message"].get<std::string>());
    }
    return true;
}

}  // namespace

std::string encode_config_check_reply(const ConfigErrors& errors) {
    // Invalid UTF-8 (quoted from the text) is replaced, never a throw.
    return json{{"errors", to_json(errors.all())},
                {"dropped", errors.dropped()},
                {"warnings", to_json(errors.warnings())}}
        .dump(-1, ' ', false, json::error_handler_t::replace);
}

std::optional<ConfigErrors> decode_config_check_reply(std::string_view reply) {
    json parsed = json::parse(reply, nullptr, false);
    if (!parsed.is_object() || !parsed.contains("errors") || !parsed.contains("dropped") ||
        !parsed["dropped"].is_number_unsigned())
        return std::nullopt;
    ConfigErrors errors;
    // A hostile helper's extra entries would only be dropped: refused instead.
    auto add = [&](std::string file, int line, int column, std::string message) {
        errors.add_at(std::move(file), line, column, std::move(message));
    };
    if (!read_placed(parsed["errors"], ConfigErrors::kMaxKept, add)) return std::nullopt;
    auto warn = [&](std::string file, int line, int column, std::string message) {
        errors.warn_at(std::move(file), line, column, std::move(message));
    };
    if (parsed.contains("warnings") &&
        !read_placed(parsed["warnings"], ConfigErrors::kMaxKept, warn))
        return std::nullopt;
    errors.add_dropped(parsed["dropped"].get<std::size_t>());
    return errors;
}

}  // namespace infervisor
