// Parses the `metrics:` block (see metrics_settings.h) and checks it where it
// is written: a relative or non-.prom textfile, a listen value that is not
// ADDRESS:PORT with an IP address (no name is resolved), a textfile_interval
// outside 1s-10m, a history outside 0-24h are errors at their file:line:column.
#pragma once

#include "base/result.h"
#include "config/metrics_settings.h"
#include "yaml/config_errors.h"

namespace YAML {
class Node;
}

namespace infervisor {

void parse_metrics_settings(const YAML::Node& node, MetricsSettings& out, ConfigErrors& errors);

// "127.0.0.1:9816", "[::1]:9816" → address and port; an error message otherwise.
struct ListenAddress {
    std::string address;
    uint16_t port = 0;
};
Result<ListenAddress> parse_listen_address(const std::string& text);

}  // namespace infervisor
