// Paths: every kernel and system root the daemon touches, injectable so that
// tests run against temp-dir fixtures (as oomd does with --cgroup-fs).
#pragma once

#include <filesystem>
#include <string>

namespace infervisor {

struct Paths {
    std::filesystem::path procfs = "/proc";
    // Root of this daemon's delegated cgroup subtree. Empty: discover it from
    // /proc/self/cgroup and /proc/self/mountinfo at start-up.
    std::filesystem::path cgroup_root;
    std::filesystem::path runtime_dir = "/run/infervisor";
    std::filesystem::path state_dir = "/var/lib/infervisor";
    std::filesystem::path tmpfiles_dir = "/run/tmpfiles.d";
    std::filesystem::path sysfs = "/sys";
    // Device nodes: a GPU's render node and /dev/kfd, whose groups a worker
    // on that GPU gets (gpu/gpu_device_groups.h).
    std::filesystem::path devfs = "/dev";
    // NVIDIA's management library, as dlopen(3) finds it (gpu/nvml_library.h);
    // tests load a stand-in.
    std::string nvml_library = "libnvidia-ml.so.1";
    // The CUDA driver library, loaded only by the cuda-checkpoint helper
    // (gpu/cuda_checkpoint.h), never by the daemon; tests load a stand-in.
    std::string cuda_library = "libcuda.so.1";
    // The infervisord binary that runs helpers (process/helper_process.h):
    // the very image that runs; tests name the built daemon.
    std::string helper_program = "/proc/self/exe";
    // The TLS client of https probes and engine requests, a program of its
    // own so that OpenSSL stays out of the daemon (probe/tls_relay.h); tests
    // run the one they built.
    std::filesystem::path tls_relay = INFERVISOR_TLS_RELAY;
    // What the daemon asks systemd through (app/systemd_manager.h), a
    // program of its own so that libsystemd stays out of the daemon.
    std::filesystem::path unit_state = INFERVISOR_UNIT_STATE;
};

}  // namespace infervisor
