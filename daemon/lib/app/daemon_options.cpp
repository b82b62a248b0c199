#include "app/daemon_options.h"

#include <CLI/CLI.hpp>

namespace infervisor {

std::variant<DaemonOptions, int> parse_daemon_options(int argc, char** argv) {
    DaemonOptions o;
    CLI::App app{
        "infervisord " INFERVISOR_VERSION
        " - supervises AI inference workers, each in its own "
        "cgroup v2 child with memory and swap caps, and restarts them by policy.\n\n"
        "Normally started by systemd (infervisord.service). Reload the configuration with "
        "SIGHUP (systemctl reload infervisord); stop all workers with SIGTERM. The workers "
        "live in infervisor-workers.service's cgroup and outlive a restart of the daemon.",
        "infervisord"};
    app.get_formatter()->column_width(32);
    app.failure_message([](const CLI::App*, const CLI::Error& e) {
        return std::string("infervisord: ") + e.what() + "\n(see 'infervisord --help')\n";
    });
    app.add_option("-c,--config", o.config_file, "Main configuration file")->capture_default_str();
    app.add_option("--workers-dir", o.workers_dir,
                   "Directory of worker drop-ins (*.yaml) [default: workers.d next to --config]");
    app.add_flag("--check-config", o.check_config,
                 "Validate the configuration, print every error as file:line:column, and exit "
                 "(0 valid, 1 invalid)");
    app.add_option("--log-level", o.log_level, "trace, debug, info, warn or error")
        ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
    app.add_option("--cgroup-root", o.cgroup_root,
                   "cgroup v2 directory to own; workers then end with the daemon's unit "
                   "[default: the cgroup of the unit named in $INFERVISOR_WORKERS_UNIT, else this "
                   "process's]");
    app.add_option("--runtime-dir", o.runtime_dir, "Sockets [default: /run/infervisor]");
    app.add_option("--state-dir", o.state_dir,
                   "Work and checkpoint dirs [default: /var/lib/infervisor]");
    app.add_option("--nvml-library", o.nvml_library,
                   "NVIDIA's management library, for GPU figures: a file, or a name the dynamic "
                   "linker finds [default: libnvidia-ml.so.1; a host without it has no NVIDIA "
                   "figures]");
    app.add_option("--cuda-library", o.cuda_library,
                   "The CUDA driver library, loaded only by the short-lived helper that moves a "
                   "suspended worker's GPU memory to host memory and back [default: "
                   "libcuda.so.1]");
    app.add_option("--tls-relay", o.tls_relay,
                   "The program that speaks TLS for https probes and engine requests, one "
                   "short-lived unprivileged process per exchange [default: " INFERVISOR_TLS_RELAY
                   "]");
    app.set_version_flag("-V,--version", "infervisord " INFERVISOR_VERSION);
    app.footer(
        "Files:\n  /etc/infervisor/infervisor.yaml, /etc/infervisor/workers.d/*.yaml\n"
        "See infervisord(8), infervisor.yaml(5), infervisorctl(1).");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        // --help and --version: 0. Any usage error: 2, as infervisord(8)
        // says (CLI11's own codes, 105 to 109, tell a caller nothing).
        return app.exit(e) == 0 ? 0 : 2;
    }
    return o;
}

}  // namespace infervisor
