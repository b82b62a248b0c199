// GpuWatch: the host's GPUs and each worker's use of them, read in the
// background for the policy's samples, the metrics and a start's
// gpu.devices (gpu/gpu_assignment.h).
//
// Contract: nothing is opened at construction. The first refresh() opens
// the sources on a background thread and takes a first reading there (a
// sick GPU can hang nvmlInit, and the daemon must still start and supervise
// its other workers): NVML for NVIDIA (loaded only when the host has
// libnvidia-ml.so.1: it stays mapped, and locked, in the daemon's memory),
// DRM fdinfo for AMD and Intel (only when /sys/class/drm has such a card).
// A host with neither says so once in the log, and is looked at again every
// kReopenInterval (a driver that loads after the daemon). Then refresh()
// begins one reading at a time on that thread: NVML's calls take
// milliseconds and procfs reads may block on a thrashing host, and the
// event loop must do neither. A start that needs gpu.devices before the
// first open has finished, or on a host where none is open, waits
// (devices_for_start()). A sample takes the last reading
// unless it is older than the caller's `max_age` (then the GPU fields stay
// empty, and rules on them do not act on stale numbers).
//
// A card in error is not a worker's fault: each card that goes into error
// (GpuDevice::fault) or vanishes from its driver's list is journaled once
// (gpu-fault, GPU_DEVICE=, GPU_NAME=, GPU_FAULT=), and its recovery too
// (gpu-recovered). A card missing from two readings in a row is gone (one
// missing reading is a driver's hiccup, not a fault); it stays in
// devices() with a fault and without figures, so that a worker whose
// gpu.devices names it waits to start (gpu/gpu_assignment.h) instead of
// failing its starts into the limit. A card's name and UUID, once read,
// are kept when a later reading cannot read them. Errors of a reading that
// the last one did not have are logged.
//
// A card is in error (GpuDevice::fault) from the state its driver keeps,
// read anew at each reading: lost, uncorrected ECC errors since the driver
// loaded, a row remap pending or failed (gpu/nvml_library.h). An Xid event
// does not by itself put a card in error: it is a report of the past, and
// whether the card is still usable is what that state says (an Xid 48 or 95
// leaves uncorrected ECC errors counted until a reset, an Xid 79 a lost
// card). Each Xid NVML reports is journaled once (gpu-xid, GPU_DEVICE=,
// GPU_NAME=, GPU_XID=, GPU_XID_MEANING= from gpu/nvidia_xid.h) and counted
// per card and code (xid_counts(), the metric
// infervisor_gpu_xid_errors_total).
//
// A stale NVML (NvmlLibrary::stale(): its calls answer "driver not
// loaded", "uninitialized" or "NVML/RM version mismatch" after a driver
// reload or upgrade) is closed on the background thread after the reading
// that found it, with one warning in the log saying why, and opened again
// every kReopenInterval until it opens. Meanwhile the NVIDIA cards seen stay
// in devices() in error ("its driver does not answer NVML ..."), journaled as
// gpu-fault at once, so that starts on them wait; after the reopen the
// first reading that lists them healthy journals gpu-recovered.
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
#include "base/result.h"
#include "cgroup/dmem.h"
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
    static constexpr Duration kReopenInterval = std::chrono::minutes(1);

    // `events`: where gpu-fault, gpu-recovered and gpu-xid go; null: nowhere.
    GpuWatch(boost::asio::io_context& io, const Paths& paths, const Clock& clock,
             EventBus* events = nullptr);
    ~GpuWatch();
    GpuWatch(const GpuWatch&) = delete;
    GpuWatch& operator=(const GpuWatch&) = delete;

    // Whether any source is open; whether the first open has finished.
    bool active() const { return nvml_ != nullptr || drm_ != nullptr; }
    // Whether AMD or Intel cards are read (the ones dmem regions are for).
    bool reads_drm() const { return drm_ != nullptr; }
    bool opened() const { return opened_; }

    // Opens the sources (the first call; then every kReopenInterval while
    // none is open), or begins a reading; unless one of these is under way
    // or the last reading began less than `min_gap` ago. `worker_cgroups`
    // are the workers' cgroup directories: the DRM source reads the fdinfo
    // of their processes (NVML lists its processes itself).
    void refresh(std::vector<std::filesystem::path> worker_cgroups, Duration min_gap);

    // The last reading; null before the first, or when no source is open.
    const GpuReading* last() const { return last_ ? &*last_ : nullptr; }
    // The cards: those of the last reading and those gone since, in error;
    // nullopt when no source is open.
    std::optional<std::vector<GpuDevice>> devices() const;
    // The same for a start: an error with EWOULDBLOCK (the start waits)
    // before the first open has finished and while no source is open.
    Result<std::vector<GpuDevice>> devices_for_start() const;

    // The worker in `cgroup` (relative to the cgroup2 mount, leading '/').
    // `dmem`: the worker's dmem.current (cgroup/dmem.h), where the kernel has
    // the controller: what it charges on a card that the processes' fdinfo
    // does not show (a driver without fdinfo memory stats, a process whose
    // fdinfo could not be read) counts as the worker's (add_dmem_use()).
    void fill(WorkerSample& sample, std::string_view cgroup, const std::optional<GpuSpec>& spec,
              Duration max_age, const std::vector<DmemRegion>& dmem = {}) const;
    void fill(HostSample& sample, Duration max_age) const;
    // What the processes of `cgroup` hold on the devices of `vendor`
    // ("nvidia") at the last reading; empty when there is none younger
    // than `max_age`.
    std::optional<uint64_t> memory_on(std::string_view cgroup, std::string_view vendor,
                                      Duration max_age) const;

    // Xid events reported since the daemon started, per (card's PCI
    // address, or "unknown"; Xid code).
    using XidCounts = std::map<std::pair<std::string, uint64_t>, uint64_t>;
    const XidCounts& xid_counts() const { return xid_counts_; }

  private:
    struct Sources {
        std::unique_ptr<NvmlLibrary> nvml;
        std::unique_ptr<DrmUsageReader> drm;
        std::string why_no_nvml;
        std::optional<GpuReading> first;
    };
    void open_sources();
    void adopt(Sources sources);
    void reopen_nvml();
    // Sources are open, or NVML was closed as stale and will be reopened.
    bool watching() const { return active() || nvml_closed_at_.has_value(); }
    void take_xids(const GpuReading& reading);
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
    std::map<std::string, int> missing_;  // readings in a row a seen card was not in
    bool opened_ = false;
    std::string why_none_;                // why no source is open
    std::optional<TimePoint> opened_at_;  // the last open begun
    // When a stale NVML was closed, or its last reopen began; empty while
    // NVML is open or was never.
    std::optional<TimePoint> nvml_closed_at_;
    XidCounts xid_counts_;
    // Used on the background thread only, one reading at a time (after the
    // first, at construction).
    std::unique_ptr<NvmlLibrary> nvml_;
    std::unique_ptr<DrmUsageReader> drm_;  // null: no AMD or Intel GPU
    std::optional<GpuReading> last_;
    std::optional<TimePoint> began_;  // the reading under way, or the last
    bool reading_ = false;            // an open or a reading is under way
    // Last: its destructor waits for the job that uses nvml_.
    BackgroundWork background_;
};

// dmem.current's VRAM regions ("drm/<pci>/vram*") on the cards of
// `snapshot` that `sample` shows no use of: added to sample.gpu_devices and
// gpu_memory (and the card's total to gpu_device_memory). A card the
// processes' fdinfo shows keeps fdinfo's figure: one source per card, so a
// figure does not jump between the two.
void add_dmem_use(WorkerSample& sample, const GpuSnapshot& snapshot,
                  const std::vector<DmemRegion>& dmem);

// One reading: NVML's snapshot, DRM's for the processes of `worker_cgroups`,
// each process tagged with its cgroup. Runs on the background thread.
GpuReading read_gpus(NvmlLibrary* nvml, DrmUsageReader* drm, const Paths& paths,
                     const std::vector<std::filesystem::path>& worker_cgroups, TimePoint now);

}  // namespace infervisor
