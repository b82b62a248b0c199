// A SupervisorMetrics fed with a realistic round (every field set, a worker
// with odd characters in its last exit, host-rule and worker actions,
// checkpoints, suspensions, admissions, two GPUs, one of them lost), for the
// unit tests and for `promtool check metrics` (metrics-example).
#pragma once

#include "metrics/supervisor_metrics.h"

namespace infervisor::testing {

inline WorkerSample full_sample(TimePoint t, uint64_t memory, uint64_t swapin) {
    WorkerSample s;
    s.time = t;
    s.memory_current = memory;
    s.memory_max = 96u << 20;
    s.memory_high = 80u << 20;
    s.memory_peak = memory + 4096;
    s.swap_current = 1u << 20;
    s.swap_max = 0;
    PsiReading psi{{12.5, 3.0, 1.0, 2'500'000}, PsiAverages{4.25, 1.0, 0.5, 1'000'000}};
    s.memory_pressure = psi;
    s.io_pressure = psi;
    s.cpu_pressure = PsiReading{{1.0, 0.5, 0.1, 300}, std::nullopt};
    s.memory_events = MemoryEvents{0, 17, 3, 1, 1, 0};
    s.cpu_usage_usec = 1'500'000;
    s.swapin_pages = swapin;
    s.swapout_pages = 20;
    s.pids_current = 7;
    s.workdir_usage = 123456;
    s.workdir_quota = 1u << 30;
    s.started_at = TimePoint{std::chrono::minutes(59)};  // one run throughout
    return s;
}

// Two GPUs as NVML reads them: one that answers, one lost (no figures).
inline std::vector<GpuDevice> example_gpus() {
    GpuDevice h100{.index = 0,
                   .vendor = "nvidia",
                   .name = "NVIDIA H100 80GB HBM3",
                   .uuid = "GPU-8f6b2c1e-0000-1111-2222-333344445555",
                   .pci_bus_id = "0000:03:00.0",
                   .memory_total = 80ull << 30,
                   .memory_used = 60ull << 30,
                   .utilization = 87.5};
    GpuDevice lost{.index = 1,
                   .vendor = "nvidia",
                   .name = "NVIDIA H100 80GB HBM3",
                   .uuid = "GPU-0d1e2f3a-0000-1111-2222-333344445555",
                   .pci_bus_id = "0000:04:00.0",
                   .fault = "GPU is lost (fallen off the bus)"};
    return {h100, lost};
}

inline void feed_example(SupervisorMetrics& m) {
    m.set_workers({{.name = "leaky",
                    .state = "running",
                    .restarts = 2,
                    .last_exit = "oom-killed (memory.max reached)"},
                   {.name = "chat", .state = "running"},
                   {.name = "odd\"name\\",
                    .state = "parked",
                    .restarts = 5,
                    .last_exit = "killed by policy rule \"growth\"\nsecond line"},
                   {.name = "idle", .state = "suspended"}});
    TimePoint t0{std::chrono::hours(1)};
    for (int i = 0; i < 3; ++i) {
        EvaluationRound round;
        round.time = t0 + std::chrono::seconds(2 * i);
        round.workers.push_back(
            {"leaky", full_sample(round.time, (40u << 20) + (uint64_t(i) << 20), 100 + 50 * i),
             i ? std::optional<double>(22.5) : std::nullopt});
        WorkerSample bare;
        bare.time = round.time;
        bare.memory_current = 1u << 20;
        // chat runs on the first GPU, with a cap; leaky holds none of it.
        bare.gpu_memory = 36ull << 30;
        bare.gpu_memory_max = 40ull << 30;
        bare.gpu_utilization = 75;
        bare.gpu_device_memory = 80ull << 30;
        bare.gpu_devices = {{"0000:03:00.0", 36ull << 30}};
        round.workers.back().sample.gpu_memory = 0;
        round.workers.back().sample.gpu_utilization = 0;
        round.workers.push_back({"chat", bare, std::nullopt});
        round.gpus = example_gpus();
        round.gpu_xids = {{{"0000:04:00.0", 79}, 1}};  // before it was lost
        round.host.time = round.time;
        round.host.memory_pressure = PsiReading{{5.0, 1, 1, 9'000'000}, PsiAverages{1, 1, 1, 10}};
        round.host.pswpin = 1000;
        round.host.pswpout = 2000;
        round.host.mem_available = 512u << 20;
        round.host.mem_total = 1u << 30;
        round.evaluation_time = std::chrono::microseconds(350);
        round.tick_lateness = std::chrono::microseconds(1200);
        m.record_round(round);
    }
    m.record_action("leaky", "growth", "kill");
    m.record_action("leaky", "growth", "kill");
    m.record_action("leaky", "pressure", "throttle");
    m.record_action("", "host-pressure", "log");
    m.record_oom_kill("leaky");
    // leaky: a requested checkpoint (1.5 s), one of its own, a timeout; a restore.
    m.record_checkpoint("leaky", true, 1.5, 4096, 1'700'000'001'000);
    m.record_checkpoint("leaky", true, std::nullopt, 8192, 1'700'000'002'500);
    m.record_checkpoint("leaky", false, std::nullopt, std::nullopt, 1'700'000'003'000);
    m.record_restore("leaky", true, 0.75);
    // chat: suspended (1 MiB pushed out) and resumed 30.5 s later; idle: still suspended.
    m.record_suspension("chat", 1u << 20);
    m.record_resume("chat", 30.5);
    m.record_suspension("idle", std::nullopt);
    // chat: waited twice, admitted once after 12.5 s, once overcommitted
    // at once; idle: waits now.
    m.record_admission_wait("chat");
    m.record_admission("chat", false, 12.5);
    m.record_admission("chat", true, std::nullopt);
    m.record_admission_wait("chat");
    m.record_admission("chat", false, 0.25);
    m.record_admission_wait("idle");
}

inline DaemonStats example_daemon_stats() { return {12.5, 8u << 20, 1'700'000'000.0}; }

}  // namespace infervisor::testing
