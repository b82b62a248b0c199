// Benchmark: what one GPU sample costs the daemon with 1, 20 and 100 workers
// (issue 30: "cost of one GPU sample for 1, 20, 100 workers"). Not a test:
// it asserts nothing and reports figures.
//
// A fake host in a temp dir: for worker N a process (a made-up pid) whose
// proc/PID/cgroup says "0::/bench/workers/wN"; the tests' NVML stand-in
// (tests/unit/gpu/fake_nvml.cpp, loaded through NvmlLibrary::open's dlopen
// exactly as the daemon loads libnvidia-ml) lists 8 devices and one compute
// process per worker, spread over them. Per N, wall time per call
// (steady_clock, median and p99 over the iterations) of:
//   read  read_gpus() with NVML only: one full reading, the snapshot and the
//         cgroup tag of every process (services/gpu_watch.h); "of which
//         tags": tag_cgroups() alone, the rest is the stand-in's snapshot;
//   fill  GpuWatch::fill() of all N WorkerSamples from that reading (use_of
//         per worker);
//   drm   DrmUsageReader::read() of the N pids, each holding one DRM fd on a
//         fake amdgpu card (tests/unit/gpu/fixtures/drm/amdgpu_modern.fdinfo
//         with its own client id), over a fake /proc and /sys/class/drm.
//
// The stand-in answers from memory (it re-parses its fixture file at every
// nvmlDeviceGetCount_v2): its cost is not a real driver's. A real
// nvmlDeviceGetComputeRunningProcesses is expected to take on the order of a
// millisecond or more per device, so on a real host the NVML calls, not the
// daemon's own work measured here, should dominate a reading.
//
//   gpu-sample-bench [--iterations I] [--keep]
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/paths.h"
#include "gpu/drm_fdinfo.h"
#include "gpu/gpu_usage.h"
#include "gpu/nvml_library.h"
#include "policy/samples.h"
#include "services/gpu_watch.h"

#ifndef INFERVISOR_FAKE_NVML
#error "meson.build passes the NVML stand-in's path as INFERVISOR_FAKE_NVML"
#endif
#ifndef INFERVISOR_SOURCE_ROOT
#error "meson.build passes INFERVISOR_SOURCE_ROOT"
#endif

using namespace infervisor;
namespace fs = std::filesystem;

namespace {

constexpr unsigned kDevices = 8;
constexpr pid_t kFirstPid = 400000;  // made up: only the fake procfs has them

void write(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::trunc);
    out << text;
    if (!out) {
        std::fprintf(stderr, "cannot write %s\n", path.c_str());
        std::exit(1);
    }
}

std::string slurp(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

std::string pci_of(unsigned device) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "00000000:%02x:00.0", 0x10 + device);
    return buf;
}

std::string cgroup_of_worker(int n) { return "/bench/workers/w" + std::to_string(n); }

// 8 H100s, worker N's process on device N % 8.
std::string nvml_fixture(int workers) {
    std::string text;
    for (unsigned d = 0; d < kDevices; ++d)
        text += "device " + std::to_string(d) + " name=NVIDIA_H100 uuid=GPU-" +
                std::to_string(1000 + d) + " pci=" + pci_of(d) +
                " total=85899345920 used=42949672960 util=50\n";
    for (int n = 0; n < workers; ++n)
        text += "process " + std::to_string(n % kDevices) +
                " pid=" + std::to_string(kFirstPid + n) +
                " kind=compute used=" + std::to_string((1ull << 30) + n * 4096ull) +
                " sm=" + std::to_string(n % 100) + " ts=" + std::to_string(1000 + n) + "\n";
    return text;
}

struct Figures {
    double median = 0, p99 = 0;
};

// Wall microseconds per call of `step`, after a few warm-up calls.
Figures time_us(int iterations, const std::function<void()>& step) {
    for (int i = 0; i < 5; ++i) step();
    std::vector<double> us;
    us.reserve(iterations);
    for (int i = 0; i < iterations; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        step();
        auto t1 = std::chrono::steady_clock::now();
        us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    std::sort(us.begin(), us.end());
    return {us[us.size() / 2], us[std::min(us.size() - 1, us.size() * 99 / 100)]};
}

}  // namespace

int main(int argc, char** argv) {
    int iterations = 1000;
    bool keep = false;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--iterations") && i + 1 < argc)
            iterations = std::max(1, std::atoi(argv[++i]));
        else if (!std::strcmp(argv[i], "--keep"))
            keep = true;
        else {
            std::fprintf(stderr, "usage: %s [--iterations I] [--keep]\n", argv[0]);
            return 2;
        }
    }
    spdlog::set_level(spdlog::level::warn);  // GpuWatch's start-up lines

    char tmpl[] = "/tmp/gpu-sample-bench.XXXXXX";
    if (!::mkdtemp(tmpl)) return 1;
    const fs::path root = tmpl;
    Paths paths;
    paths.procfs = root / "proc";
    paths.sysfs = root / "sys-nvidia-only";  // no DRM card: GpuWatch opens NVML only
    paths.nvml_library = INFERVISOR_FAKE_NVML;
    fs::create_directories(paths.sysfs / "class/drm");
    const fs::path nvml_fixture_path = root / "nvml";
    ::setenv("FAKE_NVML_FIXTURE", nvml_fixture_path.c_str(), 1);

    // A fake amdgpu card at the fixture's drm-pdev, as sysfs lays it out.
    const DrmRoots drm_roots{paths.procfs, root / "sys"};
    const std::string amd_pci = "0000:04:00.0";
    {
        fs::path device = root / "sys/devices/pci0000:00" / amd_pci;
        fs::create_directories(device);
        fs::create_directories(root / "sys/bus/pci/drivers/amdgpu");
        fs::create_directory_symlink("../../../bus/pci/drivers/amdgpu", device / "driver");
        write(device / "mem_info_vram_total", "68702699520\n");
        write(device / "mem_info_vram_used", "1073741824\n");
        write(device / "gpu_busy_percent", "12\n");
        fs::create_directories(root / "sys/class/drm/card0");
        fs::create_directory_symlink("../../../devices/pci0000:00/" + amd_pci,
                                     root / "sys/class/drm/card0/device");
    }
    const std::string fdinfo = slurp(fs::path(INFERVISOR_SOURCE_ROOT) /
                                     "tests/unit/gpu/fixtures/drm/amdgpu_modern.fdinfo");
    const std::string client_line = "drm-client-id:\t30\n";
    if (fdinfo.find(client_line) == std::string::npos) {
        std::fprintf(stderr, "amdgpu_modern.fdinfo: no \"drm-client-id:\\t30\" line\n");
        return 1;
    }

    std::printf("gpu-sample-bench: wall time per call, median / p99 over %d iterations\n",
                iterations);
    std::printf("NVML: the tests' stand-in (%s), %u devices, one process per worker\n",
                INFERVISOR_FAKE_NVML, kDevices);
    std::printf("%7s  %21s  %21s  %21s  %21s\n", "workers", "read us (med / p99)",
                "of which tags us", "fill-all us (med/p99)", "drm us (med / p99)");
    int worker_counts[] = {1, 20, 100};
    for (int workers : worker_counts) {
        // Worker N: proc/PID/cgroup, and one fd on the AMD card (its own client).
        for (int n = 0; n < workers; ++n) {
            fs::path proc = paths.procfs / std::to_string(kFirstPid + n);
            if (fs::exists(proc / "cgroup")) continue;
            write(proc / "cgroup", "0::" + cgroup_of_worker(n) + "\n");
            fs::create_directories(proc / "fd");
            fs::create_symlink("/dev/dri/renderD128", proc / "fd/3");
            std::string info = fdinfo;
            info.replace(info.find(client_line), client_line.size(),
                         "drm-client-id:\t" + std::to_string(100 + n) + "\n");
            write(proc / "fdinfo/3", info);
        }
        write(nvml_fixture_path, nvml_fixture(workers));

        // (a) one full NVML reading: snapshot + cgroup tags.
        Figures read{}, tags{};
        size_t tagged = 0;
        {
            auto nvml = NvmlLibrary::open(paths.nvml_library);
            if (!nvml) {
                std::fprintf(stderr, "%s\n", nvml.error().message().c_str());
                return 1;
            }
            GpuReading last;
            read = time_us(iterations, [&] {
                last = read_gpus(nvml->get(), nullptr, paths, {}, std::chrono::steady_clock::now());
            });
            for (const auto& c : last.process_cgroups) tagged += !c.empty();
            if (last.snapshot.processes.size() != static_cast<size_t>(workers) ||
                tagged != static_cast<size_t>(workers) || !last.snapshot.errors.empty())
                std::fprintf(stderr, "warning: %zu processes, %zu tagged, %zu errors\n",
                             last.snapshot.processes.size(), tagged, last.snapshot.errors.size());
            // Of which: the cgroup tags alone (one proc/PID/cgroup read per process).
            tags = time_us(iterations, [&] { tag_cgroups(paths.procfs, last); });
        }

        // (b) every worker's sample filled from the last reading.
        Figures fill{};
        {
            boost::asio::io_context io;
            SteadyClock clock(io);
            GpuWatch watch(io, paths, clock);
            watch.refresh({}, Duration::zero());  // opens NVML in the background
            while (!watch.opened()) {
                if (io.stopped()) io.restart();  // out of work until the open posts
                io.run_one_for(std::chrono::milliseconds(50));
            }
            std::vector<std::string> cgroups;
            for (int n = 0; n < workers; ++n) cgroups.push_back(cgroup_of_worker(n));
            std::vector<WorkerSample> samples(workers);
            const Duration max_age = std::chrono::hours(1);
            fill = time_us(iterations, [&] {
                for (int n = 0; n < workers; ++n)
                    watch.fill(samples[n], cgroups[n], std::nullopt, max_age);
            });
            if (!samples.back().gpu_memory || *samples.back().gpu_memory == 0)
                std::fprintf(stderr, "warning: worker %d has no GPU memory\n", workers - 1);
        }

        // (c) DRM fdinfo of the N pids.
        Figures drm{};
        {
            DrmUsageReader reader(drm_roots);
            std::vector<pid_t> pids;
            for (int n = 0; n < workers; ++n) pids.push_back(kFirstPid + n);
            GpuSnapshot last;
            drm = time_us(iterations,
                          [&] { last = reader.read(pids, std::chrono::steady_clock::now()); });
            if (last.processes.size() != static_cast<size_t>(workers) || !last.errors.empty())
                std::fprintf(stderr, "warning: drm: %zu processes, %zu errors%s%s\n",
                             last.processes.size(), last.errors.size(),
                             last.errors.empty() ? "" : ": ",
                             last.errors.empty() ? "" : last.errors[0].c_str());
        }

        std::printf("%7d  %9.1f / %9.1f  %9.1f / %9.1f  %9.1f / %9.1f  %9.1f / %9.1f\n", workers,
                    read.median, read.p99, tags.median, tags.p99, fill.median, fill.p99, drm.median,
                    drm.p99);
    }
    std::printf(
        "The stand-in answers from memory (re-parsing its fixture per reading): these are the\n"
        "daemon's own costs, not a real driver's. Expected, not measured: a real\n"
        "nvmlDeviceGetComputeRunningProcesses takes on the order of a millisecond or more per\n"
        "device, so on a real host with %u GPUs the driver's calls should dominate a reading.\n",
        kDevices);
    if (keep)
        std::printf("fake host kept in %s\n", root.c_str());
    else
        fs::remove_all(root);
    return 0;
}
