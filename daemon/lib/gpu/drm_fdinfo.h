// The device memory (and engine busy time) that processes hold on AMD and
// Intel GPUs, read from the kernel's DRM client usage stats: the drm-* lines
// of /proc/PID/fdinfo/FD for each fd a process holds on /dev/dri/card* or
// /dev/dri/renderD*, and the cards of /sys/class/drm. The GpuSnapshot source
// for amdgpu, i915 and xe (NVIDIA comes from NVML: its cards are skipped).
//
// What this relies on (the kernel tree as of 2025, read through a mirror):
// - Documentation/gpu/drm-usage-stats.rst: "key:<whitespace>value" lines;
//   drm-driver, drm-pdev (PCI slot), drm-client-id (one per struct
//   drm_file, unique per device: the (drm-pdev, drm-client-id) pair names a
//   client however many fds or processes hold it, so it is counted once);
//   drm-total-/drm-resident-<region>: <uint> [KiB|MiB] (bytes without a
//   unit); drm-memory-<region> an amdgpu-only alias of drm-resident-;
//   drm-engine-<e>: <uint> ns, drm-engine-capacity-<e>, drm-cycles-<e> and
//   drm-total-cycles-<e>; counters may step back, and then the larger
//   previous value stands.
// - drm_file.c drm_fdinfo_print_size(): scales a size to KiB or MiB only
//   while it divides exactly, so any key may come in any of the three units.
// - amdgpu_fdinfo.c: regions vram, gtt, cpu (and gds, gws, oa, doorbell);
//   legacy "drm-memory-vram:\t%llu KiB", "drm-memory-gtt: \t..." (a space
//   before the tab).
// - i915 (Documentation/gpu/i915.rst, intel_memory_region names): regions
//   system0, local0.., stolen-system0, stolen-local0.
// - xe_drm_client.c: regions system, gtt, vram0.., stolen; no drm-engine-
//   ns, only drm-cycles-/drm-total-cycles- per engine class.
//
// Memory counted: device-local regions only, "vram*" (amdgpu, xe) and
// "local*" (i915): per region drm-resident-, else drm-memory-, else
// drm-total-. System, gtt, cpu and stolen regions are host RAM that the
// worker's memory cgroup already charges; counting them here would count
// them twice.
//
// Hostile input: the processes are untrusted, and the daemon runs as root.
// Only procfs and sysfs are read: readlink() of PID/fd/N to classify an fd
// (the link text is never opened or followed), then read() of PID/fdinfo/N,
// which the kernel writes. The pid's directory is opened once and every read
// goes through it, so a pid reused mid-read fails (ESRCH) instead of showing
// another process. Every loop and read is capped (DrmReadLimits); a number
// that overflows, an unknown unit and a malformed line are ignored. A pid or
// fd that vanishes mid-read (ENOENT, ESRCH) is skipped silently; other
// failures become "what: why" lines in GpuSnapshot::errors: at most
// max_errors of them, then one line that counts the rest.
//
// Not read: a client without drm-pdev or drm-client-id (amdgpu, i915 and xe
// print both; without them a client cannot be de-duplicated), and one whose drm-pdev is not a card
// listed here (another driver's, or NVIDIA's). Devices that are not PCI devices are not listed:
// fdinfo names a device only by its PCI slot.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "gpu/gpu_snapshot.h"

namespace infervisor {

struct DrmRoots {
    std::filesystem::path procfs = "/proc";
    std::filesystem::path sysfs = "/sys";
};

struct DrmReadLimits {
    size_t max_fds_per_pid = 4096;        // PID/fd entries looked at (readlink)
    size_t max_drm_fds_per_pid = 64;      // fdinfo files read: each costs the kernel a BO walk
    size_t max_fdinfo_bytes = 16 * 1024;  // of one fdinfo file; the rest is not read
    size_t max_errors = 16;               // "what: why" lines in GpuSnapshot::errors
};

// What one DRM fdinfo file says. Sizes in bytes.
struct DrmClientInfo {
    std::string driver;                               // drm-driver
    std::string pdev;                                 // drm-pdev, "0000:03:00.0"
    std::optional<uint64_t> client_id;                // drm-client-id
    uint64_t device_memory = 0;                       // device-local regions, as above
    std::map<std::string, uint64_t> engine_ns;        // drm-engine-<e>
    std::map<std::string, uint64_t> engine_capacity;  // drm-engine-capacity-<e>
    std::map<std::string, uint64_t> cycles;           // drm-cycles-<e>
    std::map<std::string, uint64_t> total_cycles;     // drm-total-cycles-<e>
};

// Parses fdinfo text (pure; exposed for tests and fuzzing). Lines without a
// drm- key are ignored, as are malformed ones.
DrmClientInfo parse_drm_fdinfo(std::string_view text);

// "N", "N KiB" or "N MiB" in bytes; nullopt when malformed or over 2^64-1.
std::optional<uint64_t> parse_drm_size(std::string_view value);

// Whether the host has a DRM card this source reads (any card but NVIDIA's
// and non-PCI ones): the caller checks once at start-up and leaves the source
// off when not. Costs one directory read of <sysfs>/class/drm.
bool has_drm_gpus(const DrmRoots& roots);

// The cards of <sysfs>/class/drm, by card number: cardN only (not renderD*
// nor connectors like card0-DP-1); vendor "amd" for amdgpu, "intel" for i915
// and xe, else the driver's name; amdgpu's mem_info_vram_total/used and
// gpu_busy_percent fill memory and utilization, its unique_id the uuid
// ("GPU-" and 16 hex digits, as ROCm names the card). Failures go to `errors`.
std::vector<GpuDevice> list_drm_devices(const DrmRoots& roots, std::vector<std::string>& errors);

// Reads devices and the given processes' use of them. Keeps each client's
// last engine counters so that each read after the first reports
// GpuProcessUse::utilization: per engine, the busy share of the time since
// the previous read (ns counters) or of the GPU's clock (xe's cycles),
// divided by the engine's capacity and summed over the process's clients;
// the busiest engine's figure, capped at 100. Clients not seen in a read are
// forgotten. Not thread-safe; one reader per daemon.
class DrmUsageReader {
  public:
    explicit DrmUsageReader(DrmRoots roots = {}, DrmReadLimits limits = {})
        : roots_(std::move(roots)), limits_(limits) {}

    // Each client is counted for the first pid in `pids` that holds it.
    // `now` is the time of the read (Clock::now()).
    GpuSnapshot read(const std::vector<pid_t>& pids, TimePoint now);

    // A client's counters at the previous read.
    struct ClientCounters {
        TimePoint at;
        std::map<std::string, uint64_t> engine_ns;
        std::map<std::string, uint64_t> cycles;
        std::map<std::string, uint64_t> total_cycles;
    };

  private:
    DrmRoots roots_;
    DrmReadLimits limits_;
    std::map<std::pair<std::string, uint64_t>, ClientCounters> previous_;  // by (pdev, id)
};

// One read without utilization: devices and memory only.
GpuSnapshot read_drm_usage(const DrmRoots& roots, const std::vector<pid_t>& pids,
                           const DrmReadLimits& limits = {});

}  // namespace infervisor
