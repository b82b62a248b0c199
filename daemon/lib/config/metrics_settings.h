// The `metrics:` block of the main configuration file: how the daemon hands
// its series to Prometheus, and how much history it keeps for
// `infervisorctl history`. Both outputs are off unless configured.
//
//   metrics:
//     textfile: /var/lib/prometheus/node-exporter/infervisor.prom
//     listen: 127.0.0.1:9816      # ADDRESS:PORT, [IPV6]:PORT; an IP, never a name
//     history: 1h                 # 0 keeps none
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "base/clock.h"

namespace infervisor {

struct MetricsSettings {
    // Written atomically after every evaluation round; empty: off. Absolute,
    // and ends in .prom (node_exporter reads nothing else).
    std::filesystem::path textfile;
    // HTTP listener for scrapes; empty address: off.
    std::string listen_address;
    uint16_t listen_port = 0;
    // Samples kept per worker for `infervisorctl history`.
    Duration history = std::chrono::hours(1);

    bool exported() const { return !textfile.empty() || !listen_address.empty(); }
    bool operator==(const MetricsSettings&) const = default;
};

}  // namespace infervisor
