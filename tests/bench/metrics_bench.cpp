// Benchmark: what each step of the metrics costs on the loop, per call, with
// N workers whose samples have every field set (as on a host with the memory
// controller): a round recorded (history and last samples), the exposition
// rendered, the textfile written, the daemon's own stats read. Not a test:
// it asserts nothing and reports figures. With idle-bench's whole-loop
// figures it says where the metrics' time goes.
//
//   metrics-bench [--count N] [--iterations I] [--textfile PATH]
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>

#include "metrics/process_stats.h"
#include "metrics/supervisor_metrics.h"
#include "metrics/textfile_writer.h"

using namespace infervisor;

namespace {

double cpu_seconds() {
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
    return secs(usage.ru_utime) + secs(usage.ru_stime);
}

// CPU microseconds per call of `step`.
double per_call_us(int iterations, const std::function<void(int)>& step) {
    double cpu0 = cpu_seconds();
    for (int i = 0; i < iterations; ++i) step(i);
    return 1e6 * (cpu_seconds() - cpu0) / iterations;
}

WorkerSample sample(TimePoint t, int i) {
    WorkerSample s;
    s.time = t;
    s.memory_current = (200ull << 20) + static_cast<uint64_t>(i) * 4096;
    s.memory_max = 1ull << 30;
    s.memory_high = 900ull << 20;
    s.memory_peak = 300ull << 20;
    s.swap_current = 0;
    s.swap_max = 0;
    PsiReading psi{{0.5, 0.25, 0.1, 123456}, PsiAverages{0.1, 0.05, 0.01, 4567}};
    s.memory_pressure = psi;
    s.io_pressure = psi;
    s.cpu_pressure = psi;
    s.memory_events = MemoryEvents{0, 3, 0, 0, 0, 0};
    s.cpu_usage_usec = 1'000'000 + static_cast<uint64_t>(i);
    s.swapin_pages = 10;
    s.swapout_pages = 20;
    s.pids_current = 9;
    s.workdir_usage = 1u << 20;
    return s;
}

}  // namespace

int main(int argc, char** argv) {
    int count = 20, iterations = 2000;
    std::string textfile = "/tmp/metrics-bench.prom";
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--count") && i + 1 < argc)
            count = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--iterations") && i + 1 < argc)
            iterations = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--textfile") && i + 1 < argc)
            textfile = argv[++i];
        else {
            std::fprintf(stderr, "usage: %s [--count N] [--iterations I] [--textfile PATH]\n",
                         argv[0]);
            return 2;
        }
    }
    SupervisorMetrics m;
    std::vector<WorkerView> views;
    for (int w = 0; w < count; ++w)
        views.push_back({.name = "worker" + std::to_string(w),
                         .state = "running",
                         .restarts = 1,
                         .last_exit = "exited with code 1"});
    m.set_workers(views);
    auto round_at = [&](int i) {
        EvaluationRound r;
        r.time = TimePoint{std::chrono::seconds(2 * i)};
        for (int w = 0; w < count; ++w)
            r.workers.push_back({"worker" + std::to_string(w), sample(r.time, i), 1.5});
        r.host.memory_pressure = PsiReading{{1, 1, 1, 10}, PsiAverages{1, 1, 1, 10}};
        r.host.pswpin = 1;
        r.host.pswpout = 2;
        r.host.mem_available = 1ull << 30;
        r.host.mem_total = 4ull << 30;
        return r;
    };
    std::vector<EvaluationRound> rounds;
    for (int i = 0; i < 16; ++i) rounds.push_back(round_at(i));

    double record = per_call_us(iterations, [&](int i) { m.record_round(rounds[i % 16]); });
    double views_us = per_call_us(iterations, [&](int) { m.set_workers(views); });
    std::string text;
    double render = per_call_us(iterations, [&](int) { text = m.render({1, 1, 1}); });
    double stats = per_call_us(iterations, [&](int) { (void)read_own_stats("/proc"); });
    double write = per_call_us(iterations, [&](int) {
        if (!write_textfile_atomically(textfile, text)) std::abort();
    });
    std::printf("workers: %d  exposition: %zu bytes, %zu lines\n", count, text.size(),
                static_cast<size_t>(std::count(text.begin(), text.end(), '\n')));
    std::printf(
        "record_round   %8.1f us\nset_workers    %8.1f us\nrender         %8.1f us\n"
        "read_own_stats %8.1f us\nwrite_textfile %8.1f us  (%s)\n",
        record, views_us, render, stats, write, textfile.c_str());
    std::remove(textfile.c_str());
    return 0;
}
