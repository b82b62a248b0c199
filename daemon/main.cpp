// infervisord: see infervisord(8).
#include "app/daemon.h"
#include "app/helper_mode.h"

int main(int argc, char** argv) {
    // Before anything else: a helper is a short-lived child (app/helper_mode.h).
    if (infervisor::is_helper_mode(argc, argv)) return infervisor::run_helper_mode(argc, argv);
    auto parsed = infervisor::parse_daemon_options(argc, argv);
    if (auto* code = std::get_if<int>(&parsed)) return *code;
    const auto& options = std::get<infervisor::DaemonOptions>(parsed);
    if (options.check_config) return infervisor::check_config(options);
    return infervisor::run_daemon(options);
}
