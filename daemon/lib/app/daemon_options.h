// DaemonOptions: infervisord's command line.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <variant>

namespace infervisor {

struct DaemonOptions {
    std::filesystem::path config_file = INFERVISOR_CONFIG_FILE;
    std::filesystem::path workers_dir;  // empty: <config dir>/workers.d
    bool check_config = false;
    // Overrides of the config file's settings.
    std::optional<std::string> log_level;
    std::optional<std::filesystem::path> cgroup_root, runtime_dir, state_dir;
    // NVIDIA's management library (gpu/nvml_library.h); empty: the default
    // soname, libnvidia-ml.so.1.
    std::string nvml_library;
    // The CUDA driver library for the cuda-checkpoint helper
    // (gpu/cuda_checkpoint.h); empty: the default (Paths).
    std::string cuda_library;
    // The TLS relay program (probe/tls_relay.h); empty: the installed one.
    std::filesystem::path tls_relay;
};

// Parses argv. Returns the exit code to end with instead (0 after --help or
// --version, 2 on a usage error, with the message printed).
std::variant<DaemonOptions, int> parse_daemon_options(int argc, char** argv);

}  // namespace infervisor
