// Benchmark: the supervisor's own cost while N workers sit idle — CPU time
// (user + system, of this process only, not the workers) as % of one core,
// and resident memory. The same loop as infervisord: Supervisor, PolicyRunner
// with the rules of a config file (by default the shipped one) sampling every
// sample_interval, per-worker PSI triggers and memory.events watches, and the
// work-dir monitor, the policy's recording (what `history` and `simulate`
// read), and the metrics (the textfile and HTTP outputs when the config
// turns them on). Not a test: it asserts nothing and reports figures.
// Goal on real hardware (issue 5): under 0.5 % of one core and 16 MiB RSS
// with 20 idle workers.
//
//   idle-bench [--count N] [--seconds S] [--config FILE] [--no-metrics]
//
// --no-metrics leaves the MetricsCollector out: the cost of the metrics is
// the difference between a run with and one without.
//
// Runs as root on a cgroup2 host, in a cgroup of its own below this process's
// cgroup; where the memory controller is missing (our development hosts) no
// limits are written and memory.* files are absent, which the output says.
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

#include "app/memory_lock.h"
#include "base/file_io.h"
#include "bench_supervisor.h"
#include "config/config_loader.h"
#include "services/metrics_collector.h"
#include "services/policy_runner.h"

using namespace infervisor;

namespace {

struct Args {
    int count = 20;
    int seconds = 60;
    std::string config = INFERVISOR_SHIPPED_CONFIG;
    bool metrics = true;
};

Args parse(int argc, char** argv) {
    Args a;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--count") && i + 1 < argc)
            a.count = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc)
            a.seconds = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--config") && i + 1 < argc)
            a.config = argv[++i];
        else if (!std::strcmp(argv[i], "--no-metrics"))
            a.metrics = false;
        else {
            std::fprintf(stderr,
                         "usage: %s [--count N] [--seconds S] [--config FILE] [--no-metrics]\n",
                         argv[0]);
            std::exit(2);
        }
    }
    return a;
}

double cpu_seconds() {
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
    return secs(usage.ru_utime) + secs(usage.ru_stime);
}

// "VmRSS:\t    7580 kB" in /proc/self/status, in MiB.
double status_mib(const std::string& key) {
    std::string status = read_file("/proc/self/status").value_or("");
    size_t at = status.find("\n" + key + ":");
    if (at == std::string::npos) return -1;
    return std::strtod(status.c_str() + at + key.size() + 2, nullptr) / 1024.0;
}

}  // namespace

int main(int argc, char** argv) {
    Args args = parse(argc, argv);
    spdlog::set_level(spdlog::level::warn);  // the figures, not each worker's watch choice
    // As the daemon does: its RSS includes the pinned code and libraries.
    auto locked = lock_own_memory();
    LoadedConfig loaded = load_config({args.config, "/nonexistent"});
    if (!loaded.ok()) {
        std::fprintf(stderr, "%s", loaded.errors.format().c_str());
        return 1;
    }
    auto bench = bench::BenchSupervisor::create("idle-bench");
    if (!bench) return 1;
    boost::asio::io_context& io = bench->io();
    Supervisor& supervisor = bench->supervisor();
    PolicyRunner policy(bench->context(), supervisor);
    std::optional<MetricsCollector> metrics;
    if (args.metrics) metrics.emplace(bench->context(), supervisor, policy);

    Config config = loaded.config;
    config.workers.clear();
    for (int i = 0; i < args.count; ++i) {
        WorkerSpec s;
        s.name = "idle" + std::to_string(i);
        s.command = {"/bin/sleep", "100000"};
        s.memory.max = 64ull << 20;
        s.stop_timeout = std::chrono::seconds(10);
        config.workers.push_back(s);
    }
    supervisor.apply(config);
    policy.configure(config);
    if (metrics) metrics->configure(config);
    if (metrics) metrics->start();
    policy.start();
    supervisor.workdir_monitor().start(config.daemon.workdir_scan_interval);

    // Settle (starts, first samples), then measure an idle stretch.
    io.run_for(std::chrono::seconds(2));
    double cpu0 = cpu_seconds();
    size_t evaluations0 = policy.evaluations();
    auto wall0 = std::chrono::steady_clock::now();
    io.run_for(std::chrono::seconds(args.seconds));
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    double cpu = cpu_seconds() - cpu0;
    size_t evaluations = policy.evaluations() - evaluations0;

    std::printf("idle workers: %d  measured: %.0f s  sample_interval: %s  memory controller: %s\n",
                args.count, wall, format_duration(config.daemon.sample_interval).c_str(),
                bench->have_memory() ? "yes" : "no (memory.* files absent)");
    std::printf("supervisor CPU: %.3f s = %.3f %% of one core  (%zu evaluations, %.1f us each)\n",
                cpu, 100.0 * cpu / wall, evaluations, evaluations ? 1e6 * cpu / evaluations : 0.0);
    std::printf("supervisor RSS: %.1f MiB  (peak %.1f MiB; memory %s)\n", status_mib("VmRSS"),
                status_mib("VmHWM"),
                locked ? "locked as the daemon's is" : "not locked: no CAP_IPC_LOCK");
    if (locked)
        std::printf("pinned: %.1f MiB (of it the executable %.1f MiB)\n",
                    static_cast<double>(pinned_bytes()) / (1 << 20),
                    static_cast<double>(locked->own_code_bytes) / (1 << 20));

    policy.stop();
    if (metrics) metrics->stop();
    supervisor.workdir_monitor().stop();
    bench->stop_all();
    return 0;
}
