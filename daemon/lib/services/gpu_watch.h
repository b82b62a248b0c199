// GpuWatch: the host's GPUs and each worker's use of them, read in the
// background for the policy's samples, the metrics and a start's
// gpu.devices (gpu/gpu_assignment.h).
//
// Contract: the sources are opened once, at construction: NVML for NVIDIA
// (loaded only when the host has libnvidia-ml.so.1: it stays mapped, and
// locked, in the daemon's memory), DRM fdinfo for AMD and Intel (only when
// /sys/class/drm has such a card). A host with neither costs nothing more
// and says so once in the log. When a source is open, the first reading is
// taken at construction (the first starts need the devices), then
// refresh() begins one reading at a time on a background thread: NVML's
// calls take milliseconds and procfs reads may block on a thrashing host,
// and the event loop must do neither. A sample takes the last reading
// unless it is older than the caller's `max_age` (then the GPU fields stay
// empty, and rules on them do not act on stale numbers).
//
// A card in error is not a worker's fault: each card that goes into error
// (GpuDevice::fault) or vanishes from its driver's list is journaled once
// (gpu-fault, GPU_DEVICE=, GPU_NAME=, GPU_FAULT=), and its recovery too
// (gpu-recovered). A card seen once and gone since stays in devices() with
// a fault, so that a worker whose gpu.devices names it waits to start
// (gpu/gpu_assignment.h) instead of failing its starts into the limit.
#pragma once

#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/paths.h"
#include "gpu/gpu_spec.h"
#include "gpu/gpu_usage.h"
#include "journal/event_bus.h"
#include "policy/samples.h"
#include "supervise/background_work.h"

namespace infervisor {

class NvmlLibrary;
class DrmUsageReader;

class GpuWatch {
  public:
    // `events`: where gpu-fault and gpu-recovered go; null: nowhere.
    GpuWatch(boost::asio::io_context& io, const Paths& paths, const Clock& clock,
             EventBus* events = nullptr);
    ~GpuWatch();
    GpuWatch(const GpuWatch&) = delete;
    GpuWatch& operator=(const GpuWatch&) = delete;

    // Whether any source is open.
    bool active() const { return nvml_ != nullptr || drm_ != nullptr; }

    // Begins a reading unless one is under way or the last began less than
    // `min_gap` ago. `worker_cgroups` are the workers' cgroup directories:
    // the DRM source reads the fdinfo of their processes (NVML lists its
    // processes itself).
    void refresh(std::vector<std::filesystem::path> worker_cgroups, Duration min_gap);

    // The last reading; null before the first, or when no source is open.
    const GpuReading* last() const { return last_ ? &*last_ : nullptr; }
    // The devices of the last reading; nullopt when no source is open.
    std::optional<std::vector<GpuDevice>> devices() const;

    // The worker in `cgroup` (relative to the cgroup2 mount, leading '/').
    void fill(WorkerSample& sample, std::string_view cgroup, const std::optional<GpuSpec>& spec,
              Duration max_age) const;
    void fill(HostSample& sample, Duration max_age) const;

  private:
    bool fresh(Duration max_age) const;
    // Takes a reading: journals the cards that went into error or came
    // back, and remembers every card seen.
    void take(GpuReading reading);
    std::string key_of(GpuDevice& device) const;

    const Paths paths_;
    const Clock& clock_;
    EventBus* events_;
    // Every card seen, by PCI address, as last seen; `fault` is the one
    // journaled (empty: none).
    std::map<std::string, GpuDevice> seen_;
    // Used on the background thread only, one reading at a time (after the
    // first, at construction).
    std::unique_ptr<NvmlLibrary> nvml_;
    std::unique_ptr<DrmUsageReader> drm_;  // null: no AMD or Intel GPU
    std::optional<GpuReading> last_;
    std::optional<TimePoint> began_;  // the reading under way, or the last
    bool reading_ = false;
    // Last: its destructor waits for the job that uses nvml_.
    BackgroundWork background_;
};

// One reading: NVML's snapshot, DRM's for the processes of `worker_cgroups`,
// each process tagged with its cgroup. Runs on the background thread.
GpuReading read_gpus(NvmlLibrary* nvml, DrmUsageReader* drm, const Paths& paths,
                     const std::vector<std::filesystem::path>& worker_cgroups, TimePoint now);

}  // namespace infervisor
