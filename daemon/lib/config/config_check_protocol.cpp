#include "config/config_check_protocol.h"

#include <unistd.h>

#include <cerrno>
#include <nlohmann/json.hpp>

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

bool write_all(int fd, const std::string& data) {
    std::size_t done = 0;
    while (done < data.size()) {
        ssize_t n = ::write(fd, data.data() + done, data.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += static_cast<std::size_t>(n);
    }
    return true;
}

}  // namespace

int config_check_helper_main(int in_fd, int out_fd, const std::string& name) {
    auto text = read_bounded(in_fd, config_limits::kMaxFileBytes);
    if (!text) return 1;
    ValidationOptions options;
    options.as_caller = ::geteuid() != 0;
    // An over-long text is refused by load_config_text itself.
    auto loaded = load_config_text(*text, name, options);
    return write_all(out_fd, encode_config_check_reply(loaded.errors)) ? 0 : 1;
}

std::string encode_config_check_reply(const ConfigErrors& errors) {
    json list = json::array();
    for (const auto& e : errors.all())
        list.push_back(
            {{"file", e.file}, {"line", e.line}, {"column", e.column}, {"message", e.message}});
    // Invalid UTF-8 (quoted from the text) is replaced, never a throw.
    return json{{"errors", std::move(list)}, {"dropped", errors.dropped()}}.dump(
        -1, ' ', false, json::error_handler_t::replace);
}

std::optional<ConfigErrors> decode_config_check_reply(std::string_view reply) {
    json parsed = json::parse(reply, nullptr, false);
    if (!parsed.is_object() || !parsed.contains("errors") || !parsed["errors"].is_array() ||
        !parsed.contains("dropped") || !parsed["dropped"].is_number_unsigned())
        return std::nullopt;
    ConfigErrors errors;
    for (const auto& e : parsed["errors"]) {
        if (!e.is_object() || !e.value("file", json()).is_string() ||
            !e.value("line", json()).is_number_integer() ||
            !e.value("column", json()).is_number_integer() ||
            !e.value("message", json()).is_string())
            return std::nullopt;
        errors.add_at(e["file"].get<std::string>(), e["line"].get<int>(), e["column"].get<int>(),
                      e["message"].get<std::string>());
    }
    errors.add_dropped(parsed["dropped"].get<std::size_t>());
    return errors;
}

}  // namespace infervisor
