// Samples: one reading of the kernel's numbers for a worker or for the host,
// the input of the policy engine. Plain data; a field the kernel does not
// provide (file missing, unreadable or malformed) is left empty, so a host
// without, say, memory.swap.current still gets every other signal watched.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "cgroup/cgroup_stats.h"
#include "cgroup/psi.h"

namespace infervisor {

// Series of a worker's own metrics endpoint (engine.metrics), each the sum
// over its label sets, by Prometheus metric name.
using EngineSeries = std::map<std::string, double, std::less<>>;

// One scrape of that endpoint (engine/metrics_scrape.h): when its answer
// came and the series the worker's rules name that it showed.
struct EngineReading {
    TimePoint time{};
    EngineSeries series;
};

struct WorkerSample {
    TimePoint time{};  // when the kernel files were read

    // From the worker's cgroup (see sample_worker()). Limits are empty both
    // when the file says "max" and when it cannot be read: either way there is
    // no finite limit to measure against.
    std::optional<uint64_t> memory_current;
    std::optional<uint64_t> memory_max;
    std::optional<uint64_t> memory_high;
    std::optional<uint64_t> swap_current;
    std::optional<uint64_t> swap_max;
    std::optional<PsiReading> memory_pressure;
    std::optional<PsiReading> cpu_pressure;
    std::optional<PsiReading> io_pressure;
    std::optional<MemoryEvents> memory_events;
    std::optional<uint64_t> cpu_usage_usec;  // cpu.stat usage_usec
    // Pages swapped in/out by this cgroup, cumulative: memory.stat pswpin and
    // pswpout where the kernel has them; otherwise swap-in falls back to
    // workingset_refault_anon (6.1 has no per-cgroup pswpin; every anon refault
    // is a page coming back from swap or zswap) and swap-out stays empty.
    std::optional<uint64_t> swapin_pages;
    std::optional<uint64_t> swapout_pages;
    // memory.stat anon: anonymous memory (heap, anonymous mmap), the part of
    // memory.current the kernel cannot drop; page cache (a model mmapped from
    // its file) is not in it. Host rules choose victims by it (victim.h).
    std::optional<uint64_t> memory_anon;
    // memory.stat unevictable: pages no reclaim can move (mlocked, ramfs);
    // a suspension leaves them in RAM (preempt_ladder.h).
    std::optional<uint64_t> memory_unevictable;
    // Only when sample_worker_extras() ran (the metrics, when they render).
    std::optional<uint64_t> memory_peak;   // memory.peak (5.19+)
    std::optional<uint64_t> pids_current;  // pids.current

    // From the supervisor, not the kernel: the caller fills these in.
    std::optional<TimePoint> started_at;
    // When the run became `running` (Worker::ready_at()); empty while it is
    // still starting (loading: before READY=1, before its startup probe
    // passed).
    std::optional<TimePoint> ready_at;
    // The run is held in `starting` until the worker signals readiness
    // (Worker::signals_readiness()): ready_at is the end of its loading. When
    // false, ready_at is only the start and the engine decides when loading
    // ended (policy_engine.h).
    bool signals_readiness = false;
    // The longest a run that does not signal readiness counts as loading
    // (the worker's start_timeout); empty or 0: until its memory settles.
    std::optional<Duration> load_limit;
    std::optional<TimePoint> last_heartbeat;    // last WATCHDOG=1
    std::optional<Duration> watchdog_interval;  // empty: no watchdog
    // The work dir's disk usage (bytes, as du counts them) from the last
    // background scan, and its workdir_quota; empty until the first scan
    // finished / when there is no quota (WorkDirMonitor::fill_sample).
    std::optional<uint64_t> workdir_usage;
    std::optional<uint64_t> workdir_quota;
    // The worker's engine metrics at this sample: the last scrape's when it
    // succeeded and none begun a sample interval ago or more is still under
    // way; empty without engine.metrics (or rules that name a series), and
    // when the last scrape failed or the current one is late. A sample
    // between two scrapes carries the same reading again (same time).
    std::optional<EngineReading> engine;
    // GPU memory its processes hold, summed over the devices (bytes), and
    // their compute use (%, 200% = two busy GPUs), at the last GPU reading
    // (gpu/gpu_usage.h); 0 when it holds none on a host whose GPUs are read,
    // empty where none are or the reading is late (services/gpu_watch.h).
    std::optional<uint64_t> gpu_memory;
    std::optional<double> gpu_utilization;
    // gpu.memory_max of its spec; the total memory of the devices it holds
    // memory on (of its gpu.devices when it holds none yet).
    std::optional<uint64_t> gpu_memory_max;
    std::optional<uint64_t> gpu_device_memory;
    // The PCI addresses of the devices it holds memory on (snapshot order),
    // and parallel to them the bytes its processes hold on each.
    std::vector<std::string> gpu_devices;
    std::vector<uint64_t> gpu_device_bytes;

    // Files that existed but could not be read or parsed ("path: why"); a
    // missing file is normal (no such controller) and is not listed.
    std::vector<std::string> read_errors;
};

struct HostSample {
    TimePoint time{};
    std::optional<PsiReading> memory_pressure;  // /proc/pressure/memory
    std::optional<PsiReading> cpu_pressure;
    std::optional<PsiReading> io_pressure;
    std::optional<uint64_t> pswpin;  // /proc/vmstat, pages, cumulative
    std::optional<uint64_t> pswpout;
    std::optional<uint64_t> mem_available;  // /proc/meminfo, bytes
    std::optional<uint64_t> mem_total;
    std::optional<uint64_t> swap_total;  // /proc/meminfo SwapTotal, bytes (0: no swap)
    std::optional<uint64_t> swap_free;
    // The GPU with the least memory available at the last reading
    // (gpu/gpu_usage.h tightest_gpu()): its free bytes (total - used), its
    // total and PCI address; empty on a host whose GPUs are not read.
    std::optional<uint64_t> gpu_memory_available;
    std::optional<uint64_t> gpu_memory_total;
    std::string gpu_device;
    std::vector<std::string> read_errors;
};

}  // namespace infervisor
