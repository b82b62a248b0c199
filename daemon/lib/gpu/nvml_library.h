// NvmlLibrary: NVIDIA's GPUs and the processes holding their memory, read
// through NVML (libnvidia-ml) loaded at run time with dlopen, as nvtop does:
// the daemon builds and runs without a vendor SDK, and a host without the
// driver is an ordinary case (open() says why, once, and the caller goes on
// without NVIDIA figures).
//
// Contract:
// - open(): dlopen(RTLD_NOW | RTLD_LOCAL), every required entry point
//   resolved (a missing one is named in the Error), then nvmlInit_v2. The
//   destructor calls nvmlShutdown and dlclose.
// - read(): one GpuSnapshot (gpu/gpu_snapshot.h). NVML failures never throw
//   and never fail the whole snapshot: a device whose call answers
//   NVML_ERROR_GPU_IS_LOST gets GpuDevice::fault and is asked nothing more;
//   any other failed call is one `errors` entry, "device N: <call>: <NVML's
//   text>". NVML_ERROR_NOT_SUPPORTED leaves the figure empty without an error
//   (e.g. utilization on a MIG-enabled GPU).
// - Processes: the compute and the graphics lists (_v3, else _v2, else the
//   unsuffixed v1 entry points of older drivers). A pid in both lists of one
//   device is one GpuProcessUse with the larger figure. A process whose
//   memory NVML reports as not available (NVML_VALUE_NOT_AVAILABLE) is left
//   out: GpuProcessUse::memory is not optional and 0 would be a wrong figure.
//   On a MIG-enabled GPU the lists are read per MIG device (the parent's are
//   aggregates that need privileges) and a pid's figures on several MIG
//   devices are summed, attributed to the parent's pci_bus_id.
// - Per-process utilization (nvmlDeviceGetProcessUtilization): the newest SM
//   sample since the previous read() of that device; NVML lists only
//   processes with non-zero use, so a listed process without a sample gets 0.
//   Optional: when the entry point is absent, fails (NVML_ERROR_NOT_FOUND: no
//   sample since the last read) or the GPU is in MIG mode (not supported
//   there), the figure is empty.
// - List sizes are bounded: at most kMaxNvmlEntries per list, grown from a
//   first guess on NVML_ERROR_INSUFFICIENT_SIZE.
//
// Thread safety: read() keeps per-device state (the last utilization sample
// time) and is called from one thread at a time, a background thread, never
// the event loop (NVML calls can block for long on a sick GPU). NVML itself is
// thread-safe.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "gpu/gpu_snapshot.h"

namespace infervisor {

inline constexpr const char* kNvmlLibrary = "libnvidia-ml.so.1";
// Largest process or sample list read from one device per call.
inline constexpr unsigned kMaxNvmlEntries = 4096;

struct NvmlOpenOptions {
    // Entry points open() treats as absent from the library, as an older
    // driver's lacks them: for tests of the fallbacks. Empty in production.
    std::vector<std::string> absent_symbols;
};

class NvmlLibrary {
  public:
    // `library`: kNvmlLibrary, or a path (the tests' stand-in). The Error is
    // dlerror()'s text ("libnvidia-ml.so.1: cannot open shared object file:
    // No such file or directory"), the missing entry point, or "nvmlInit_v2:
    // <NVML's text>".
    static Result<std::unique_ptr<NvmlLibrary>> open(const std::string& library,
                                                     const NvmlOpenOptions& options = {});
    ~NvmlLibrary();
    NvmlLibrary(const NvmlLibrary&) = delete;
    NvmlLibrary& operator=(const NvmlLibrary&) = delete;

    GpuSnapshot read();

    struct EntryPoints;  // the resolved functions, defined in the .cpp

  private:
    NvmlLibrary(void* handle, std::unique_ptr<EntryPoints> entry_points);
    void read_device(unsigned index, GpuSnapshot& snapshot);

    void* handle_;  // dlopen's
    std::unique_ptr<EntryPoints> nvml_;
    // Per device index: the newest process utilization sample time seen
    // (NVML's CPU timestamp, microseconds), passed back as lastSeenTimeStamp.
    std::map<unsigned, unsigned long long> last_sample_time_;
};

}  // namespace infervisor
