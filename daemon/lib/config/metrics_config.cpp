#include "config/metrics_config.h"

#include <yaml-cpp/yaml.h>

#include <boost/asio/ip/address.hpp>
#include <charconv>

#include "base/units.h"
#include "yaml/yaml_map.h"

namespace infervisor {

Result<ListenAddress> parse_listen_address(const std::string& text) {
    const std::string usage =
        "metrics listen must be ADDRESS:PORT with an IP address, e.g. "
        "127.0.0.1:9816 or [::1]:9816, not '" +
        text + "'";
    size_t colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0) return plain_error(usage);
    std::string host = text.substr(0, colon);
    std::string port_text = text.substr(colon + 1);
    if (host.front() == '[') {
        if (host.size() < 3 || host.back() != ']') return plain_error(usage);
        host = host.substr(1, host.size() - 2);
    } else if (host.find(':') != std::string::npos) {
        return plain_error(usage);  // an IPv6 address needs brackets
    }
    boost::system::error_code ec;
    auto address = boost::asio::ip::make_address(host, ec);
    if (ec) return plain_error(usage);
    unsigned port = 0;
    auto [end, err] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (err != std::errc() || end != port_text.data() + port_text.size() || port == 0 ||
        port > 65535)
        return plain_error("metrics listen port must be 1-65535, not '" + port_text + "'");
    return ListenAddress{address.to_string(), static_cast<uint16_t>(port)};
}

void parse_metrics_settings(const YAML::Node& node, MetricsSettings& out, ConfigErrors& errors) {
    YamlMap map(node, errors, "'metrics'");
    if (!map.valid()) return;
    std::string text;
    if (map.get_string("textfile", text)) {
        std::filesystem::path path = text;
        YAML::Mark at = node["textfile"].Mark();
        if (!path.is_absolute())
            errors.add(at, "metrics textfile must be an absolute path, not '" + text + "'");
        else if (path.extension() != ".prom")
            errors.add(at,
                       "metrics textfile must end in .prom (node_exporter's textfile "
                       "collector reads only *.prom), not '" +
                           text + "'");
        else
            out.textfile = path;
    }
    if (map.get_duration("textfile_interval", out.textfile_interval) &&
        (out.textfile_interval < std::chrono::seconds(1) ||
         out.textfile_interval > std::chrono::minutes(10)))
        errors.add(node["textfile_interval"].Mark(),
                   "metrics textfile_interval must be 1s-10m, not " +
                       format_duration(out.textfile_interval));
    if (map.get_string("listen", text)) {
        auto listen = parse_listen_address(text);
        if (!listen) {
            errors.add(node["listen"].Mark(), listen.error().message());
        } else {
            out.listen_address = listen->address;
            out.listen_port = listen->port;
        }
    }
    if (map.get_duration("history", out.history) && out.history > std::chrono::hours(24))
        errors.add(node["history"].Mark(),
                   "metrics history must be at most 24h, not " + format_duration(out.history));
    map.finish();
}

}  // namespace infervisor
