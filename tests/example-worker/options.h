// Command-line options of infervisor-example-worker.
#pragma once

#include <optional>
#include <string>

namespace example_worker {

struct Options {
    std::string name;  // --name, default $INFERVISOR_WORKER, else "example"
    long load_ms = 0;
    long model_mb = 0;
    long serve_interval_ms = 1000;
    double leak_mb_per_s = 0;
    long leak_after_ms = 0;  // --leak-after-ms: serve steadily this long before leaking
    long leak_max_mb = 0;    // --leak-max-mb: stop leaking there (0: never)
    std::optional<long> spin_after_ms;
    std::optional<long> heartbeat_ms;  // --heartbeat-ms: WATCHDOG=1 this often, asked or not
    std::optional<long> crash_after_ms;
    int exit_code = 1;
    bool abort = false;
    bool ignore_sigterm = false;
    bool double_fork = false;
    int checkpoint_signal = 0;     // SIGUSR1 unless given
    std::string tmp_file;          // --tmp-file: NAME inside $TMPDIR (or /tmp), or an absolute path
    std::string hold_tmp_file;     // --hold-tmp-file: "open", "map" or "" (not held)
    bool touch_model = false;      // --touch-model: read the whole model on every serve tick
    long burst_mb = 0;             // --burst-mb: allocate this much at once on SIGUSR2
    std::string burst_stamp;       // --burst-stamp: where the burst's times go
    int http_port = 0;             // --http-port: health endpoint on 127.0.0.1; 0 = none
    long exit_after_requests = 0;  // --exit-after-requests: 0 = serve forever
};

// Parses argv. On --help prints the usage and exits 0; on a bad option prints
// the problem to stderr and exits 2.
Options parse_options(int argc, char** argv);

}  // namespace example_worker
