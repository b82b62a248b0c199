// NvmlLibrary: NVIDIA's GPUs and the processes holding their memory, read
// through NVML (libnvidia-ml) loaded at run time with dlopen, as nvtop does:
// the daemon builds and runs without a vendor SDK, and a host without the
// driver is an ordinary case (open() says why, once, and the caller goes on
// without NVIDIA figures).
//
// Contract:
// - open(): dlopen(RTLD_NOW | RTLD_LOCAL), every required entry point
//   resolved (a missing one is named in the Error), then nvmlInit_v2, then
//   every device's Xid events registered in one event set (below). close(),
//   and the destructor, free the set and call nvmlShutdown and dlclose.
// - read(): one GpuSnapshot (gpu/gpu_snapshot.h). NVML failures never throw
//   and never fail the whole snapshot: a device whose call answers
//   NVML_ERROR_GPU_IS_LOST gets GpuDevice::fault and is asked nothing more;
//   any other failed call is one `errors` entry, "device N: <call>: <NVML's
//   text>". NVML_ERROR_NOT_SUPPORTED leaves the figure empty without an error
//   (e.g. utilization on a MIG-enabled GPU).
// - Health: GpuDevice::fault also says when the card needs a reset or
//   service though it answers: uncorrected ECC errors since the driver
//   loaded (nvmlDeviceGetTotalEccErrors, volatile: a GPU reset clears them),
//   a row remap pending or failed (nvmlDeviceGetRemappedRows). Both entry
//   points are optional; absent or NOT_SUPPORTED (no ECC): no figure, no
//   error. The card's figures and processes are still read.
// - Xid events (GpuSnapshot::xids): nvmlEventTypeXidCriticalError of every
//   device, registered at open (a device answering NOT_SUPPORTED is left
//   out; the event entry points are optional), drained at each read() with
//   nvmlEventSetWait_v2 and a zero timeout, at most kMaxXidEventsPerRead
//   (the rest wait for the next read). Each event is reported once.
// - Staleness: when nvmlDeviceGetCount_v2, or a call on every device,
//   answers NVML_ERROR_UNINITIALIZED, _DRIVER_NOT_LOADED or
//   _LIB_RM_VERSION_MISMATCH (the driver was unloaded or upgraded under the
//   library), stale() says why from then on: the caller closes the library
//   and opens it again later. The calls are also `errors` entries.
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
// Most Xid events one read() takes from the event set.
inline constexpr unsigned kMaxXidEventsPerRead = 64;

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
    // "nvmlDeviceGetCount_v2: <NVML's text>" once the library answers as a
    // stale one (see the contract); empty while it does not.
    const std::string& stale() const { return stale_; }
    // Frees the event set, nvmlShutdown, dlclose; read() then answers only
    // an error. For a stale library, on the thread that reads (NVML calls
    // can block). Idempotent; the destructor calls it.
    void close();

    struct EntryPoints;  // the resolved functions, defined in the .cpp

  private:
    NvmlLibrary(void* handle, std::unique_ptr<EntryPoints> entry_points);
    // Empty, or why the library looks stale from this device's calls.
    std::string read_device(unsigned index, GpuSnapshot& snapshot);
    void register_xid_events();
    void drain_xid_events(GpuSnapshot& snapshot);

    void* handle_;  // dlopen's; null once closed
    std::unique_ptr<EntryPoints> nvml_;
    // Per device index: the newest process utilization sample time seen
    // (NVML's CPU timestamp, microseconds), passed back as lastSeenTimeStamp.
    std::map<unsigned, unsigned long long> last_sample_time_;
    void* event_set_ = nullptr;  // nvmlEventSet_t; null: no Xid events
    // Device handle -> its pci_bus_id, as last read: where an Xid happened.
    std::map<const void*, std::string> bus_ids_;
    std::vector<std::string> open_errors_;  // given with the first read()
    std::string stale_;
};

}  // namespace infervisor
