// The `metrics:` block of the main configuration file: how the daemon hands
// its series to Prometheus, and how much history it keeps for
// `infervisorctl history`. Both outputs are off unless configured.
//
//   metrics:
//     textfile: /var/lib/prometheus/node-exporter/infervisor.prom
//     textfile_interval: 15s      # how often it is rewritten (1s-10m)
//     listen: 127.0.0.1:9816      # ADDRESS:PORT, [IPV6]:PORT; an IP, never a name
//     history: 1h                 # 0 keeps none
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "base/clock.h"

namespace infervisor {

struct MetricsSettings {
    // Written atomically; empty: off. Absolute, and ends in .prom
    // (node_exporter reads nothing else).
    std::filesystem::path textfile;
    // Rewritten after the evaluation round that comes this long after the
    // last write, give or take half a sample_interval: a scrape interval's
    // freshness, without rendering and writing the whole exposition every
    // round.
    Duration textfile_interval = std::chrono::seconds(15);
    // HTTP listener for scrapes; empty address: off.
    std::string listen_address;
    uint16_t listen_port = 0;
    // Samples kept per worker for `infervisorctl history`.
    Duration history = std::chrono::hours(1);

    bool exported() const { return !textfile.empty() || !listen_address.empty(); }
    bool operator==(const MetricsSettings&) const = default;
};

}  // namespace infervisor
