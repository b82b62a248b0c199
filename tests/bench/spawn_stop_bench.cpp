// Benchmark: start N workers in their own cgroups, then stop them all, and
// print per-worker start and stop times. Not a test: it asserts nothing and
// reports figures. Goal on real hardware: 100 workers started in < 1 s.
//
//   spawn-stop-bench [--count N] [--program PATH]
//
// Runs as root on a cgroup2 host. Where the memory controller is missing (our
// development hosts) the limits are not written and the output says so.
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "bench_supervisor.h"

using namespace infervisor;
using WallClock = std::chrono::steady_clock;

namespace {

struct Args {
    int count = 100;
    std::string program = "/bin/sleep";
};

Args parse(int argc, char** argv) {
    Args a;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--count") && i + 1 < argc)
            a.count = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--program") && i + 1 < argc)
            a.program = argv[++i];
        else {
            std::fprintf(stderr, "usage: %s [--count N] [--program PATH]\n", argv[0]);
            std::exit(2);
        }
    }
    return a;
}

void report(const char* what, std::vector<double> ms) {
    if (ms.empty()) return;
    std::sort(ms.begin(), ms.end());
    auto at = [&](double q) {
        return ms[std::min(ms.size() - 1, static_cast<size_t>(q * ms.size()))];
    };
    std::printf("%-28s n=%zu min=%.2fms median=%.2fms p90=%.2fms max=%.2fms\n", what, ms.size(),
                ms.front(), at(0.5), at(0.9), ms.back());
}

double since(WallClock::time_point t0) {
    return std::chrono::duration<double, std::milli>(WallClock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
    Args args = parse(argc, argv);
    auto bench = bench::BenchSupervisor::create("bench");
    if (!bench) return 1;
    Supervisor& supervisor = bench->supervisor();
    EventBus& bus = bench->events();
    bool have_memory = bench->have_memory();

    std::map<std::string, double> started_ms, stopped_ms;
    WallClock::time_point t0 = WallClock::now();
    bus.subscribe([&](const Event& e) {
        if (e.kind == EventKind::started) started_ms[e.worker] = since(t0);
        if (e.kind == EventKind::stopped) stopped_ms[e.worker] = since(t0);
    });

    Config config;
    for (int i = 0; i < args.count; ++i) {
        WorkerSpec s;
        s.name = "w" + std::to_string(i);
        s.command = {args.program, "1000"};
        s.memory.max = 64ull << 20;
        s.stop_timeout = std::chrono::seconds(10);
        config.workers.push_back(s);
    }
    t0 = WallClock::now();
    supervisor.apply(config);
    double start_all = since(t0);
    std::vector<double> start_each;
    double prev = 0;
    for (auto& [name, t] : started_ms) start_each.push_back(t);
    std::sort(start_each.begin(), start_each.end());
    std::vector<double> start_delta;
    for (double t : start_each) start_delta.push_back(t - prev), prev = t;

    t0 = WallClock::now();
    bench->stop_all();
    double stop_all = since(t0);
    std::vector<double> stop_each;
    for (auto& [name, t] : stopped_ms) stop_each.push_back(t);

    std::printf("workers: %d  program: %s  memory controller: %s\n", args.count,
                args.program.c_str(),
                have_memory ? "yes (limits written)" : "no (limits not written)");
    std::printf("start all (in their cgroups): %.1f ms\n", start_all);
    report("start, per worker", start_delta);
    std::printf("stop all (SIGTERM, cgroup empty, rmdir): %.1f ms\n", stop_all);
    report("stop, completion time", stop_each);
    return 0;
}
