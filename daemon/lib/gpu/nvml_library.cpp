#include "gpu/nvml_library.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string_view>

namespace infervisor {

// NVML's declarations, the few used here, so that no nvml.h is needed to
// build. Taken from nvml.h as NVIDIA publishes it in NVIDIA/go-nvml,
// pkg/nvml/nvml.h at commit 2f9e261fe40a (NVML API 13): nvmlPciInfo_t,
// nvmlMemory_t (v1), nvmlUtilization_t, nvmlProcessInfo_v1_t and _v2_t
// (nvmlProcessInfo_t, which the _v3 entry points take, is the v2 layout),
// nvmlProcessUtilizationSample_t, the nvmlReturn_t values, and the v1/_v2
// process list prototypes from its backwards-compatibility section. The same
// layouts are in nvtop's src/extract_gpuinfo_nvidia.c (Syllo/nvtop at
// 3d4a953da02b), which loads NVML the same way. The health and event
// declarations (nvmlDeviceGetTotalEccErrors, nvmlDeviceGetRemappedRows, the
// event set calls, nvmlEventData_t with its gpuInstanceId and
// computeInstanceId of NVML 11 and later, the values of
// nvmlMemoryErrorType_t, nvmlEccCounterType_t and
// nvmlEventTypeXidCriticalError) are from the same nvml.h. An older NVML
// writes only the first 24 bytes of nvmlEventData_t: the rest is zeroed here.
namespace nvml_abi {

using nvmlReturn_t = int;  // an enum of values 0..999 in nvml.h: int-sized
struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;

constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr nvmlReturn_t NVML_ERROR_UNINITIALIZED = 1;
constexpr nvmlReturn_t NVML_ERROR_NOT_SUPPORTED = 3;
constexpr nvmlReturn_t NVML_ERROR_NOT_FOUND = 6;
constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_SIZE = 7;
constexpr nvmlReturn_t NVML_ERROR_DRIVER_NOT_LOADED = 9;
constexpr nvmlReturn_t NVML_ERROR_TIMEOUT = 10;
constexpr nvmlReturn_t NVML_ERROR_GPU_IS_LOST = 15;
constexpr nvmlReturn_t NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18;
constexpr int NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1;  // nvmlMemoryErrorType_t
constexpr int NVML_VOLATILE_ECC = 0;                   // nvmlEccCounterType_t
constexpr unsigned long long nvmlEventTypeXidCriticalError = 0x8;
constexpr unsigned NVML_DEVICE_MIG_ENABLE = 1;
// NVML_VALUE_NOT_AVAILABLE is (-1), stored in unsigned long long fields.
constexpr unsigned long long NVML_VALUE_NOT_AVAILABLE_ULL = ULLONG_MAX;
constexpr unsigned NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96;
constexpr unsigned NVML_DEVICE_UUID_V2_BUFFER_SIZE = 96;

struct nvmlPciInfo_t {
    char busIdLegacy[16];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    char busId[32];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE: "00000000:03:00.0"
};

struct nvmlMemory_t {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
};

struct nvmlUtilization_t {
    unsigned int gpu;
    unsigned int memory;
};

struct nvmlProcessInfo_v1_t {
    unsigned int pid;
    unsigned long long usedGpuMemory;
};

struct nvmlProcessInfo_v2_t {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
};

struct nvmlProcessUtilizationSample_t {
    unsigned int pid;
    unsigned long long timeStamp;  // CPU time, microseconds
    unsigned int smUtil;
    unsigned int memUtil;
    unsigned int encUtil;
    unsigned int decUtil;
};

struct nvmlEventSet_st;
using nvmlEventSet_t = nvmlEventSet_st*;

struct nvmlEventData_t {
    nvmlDevice_t device;
    unsigned long long eventType;
    unsigned long long eventData;  // the Xid for nvmlEventTypeXidCriticalError (999: unknown)
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
};

// The C layouts on LP64 (x86_64, aarch64), pinned against accidental edits.
static_assert(sizeof(nvmlPciInfo_t) == 68);
static_assert(sizeof(nvmlProcessInfo_v1_t) == 16);
static_assert(sizeof(nvmlProcessInfo_v2_t) == 24);
static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32);
static_assert(sizeof(nvmlEventData_t) == 32);

// Which struct a process list entry point fills. Outside the anonymous
// namespace: NvmlLibrary::EntryPoints, which has external linkage, holds it.
enum class ProcessLayout { v1, v2 };  // v2: also the _v3 entry points'

struct ProcessListCall {
    std::string name;  // the entry point resolved, for messages
    void (*function)() = nullptr;
    ProcessLayout layout = ProcessLayout::v2;
};

}  // namespace nvml_abi

using namespace nvml_abi;

namespace {

constexpr const char* kGpuLost = "GPU is lost (fallen off the bus)";
constexpr unsigned kFirstListGuess = 64;
constexpr unsigned kMaxDevices = 256;
constexpr unsigned kMaxMigDevices = 64;

// What NVML answers once the driver under it was unloaded or upgraded: the
// library must be closed and opened again (NvmlLibrary::stale()).
bool means_stale(nvmlReturn_t code) {
    return code == NVML_ERROR_UNINITIALIZED || code == NVML_ERROR_DRIVER_NOT_LOADED ||
           code == NVML_ERROR_LIB_RM_VERSION_MISMATCH;
}
// Not an NVML code: a list longer than kMaxNvmlEntries.
constexpr nvmlReturn_t kTooManyEntries = -1;

using AnyFunction = void (*)();

struct ProcessFigure {
    unsigned pid = 0;
    unsigned long long used = 0;
};

}  // namespace

struct NvmlLibrary::EntryPoints {
    nvmlReturn_t (*init)() = nullptr;
    nvmlReturn_t (*shutdown)() = nullptr;
    nvmlReturn_t (*get_count)(unsigned*) = nullptr;
    nvmlReturn_t (*get_handle)(unsigned, nvmlDevice_t*) = nullptr;
    nvmlReturn_t (*get_name)(nvmlDevice_t, char*, unsigned) = nullptr;
    nvmlReturn_t (*get_uuid)(nvmlDevice_t, char*, unsigned) = nullptr;
    nvmlReturn_t (*get_pci_info)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
    nvmlReturn_t (*get_memory_info)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
    nvmlReturn_t (*get_utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
    ProcessListCall compute_processes;
    ProcessListCall graphics_processes;
    // Optional: null when the library lacks them.
    const char* (*error_string)(nvmlReturn_t) = nullptr;
    nvmlReturn_t (*get_process_utilization)(nvmlDevice_t, nvmlProcessUtilizationSample_t*,
                                            unsigned*, unsigned long long) = nullptr;
    nvmlReturn_t (*get_mig_mode)(nvmlDevice_t, unsigned*, unsigned*) = nullptr;
    nvmlReturn_t (*get_max_mig_device_count)(nvmlDevice_t, unsigned*) = nullptr;
    nvmlReturn_t (*get_mig_device_handle)(nvmlDevice_t, unsigned, nvmlDevice_t*) = nullptr;
    nvmlReturn_t (*get_total_ecc_errors)(nvmlDevice_t, int, int, unsigned long long*) = nullptr;
    nvmlReturn_t (*get_remapped_rows)(nvmlDevice_t, unsigned*, unsigned*, unsigned*,
                                      unsigned*) = nullptr;
    nvmlReturn_t (*event_set_create)(nvmlEventSet_t*) = nullptr;
    nvmlReturn_t (*register_events)(nvmlDevice_t, unsigned long long, nvmlEventSet_t) = nullptr;
    nvmlReturn_t (*event_set_wait)(nvmlEventSet_t, nvmlEventData_t*, unsigned) = nullptr;
    nvmlReturn_t (*event_set_free)(nvmlEventSet_t) = nullptr;

    // NVML's words for `code`, or the number when it has none.
    std::string text(nvmlReturn_t code) const {
        if (code == kTooManyEntries)
            return "more than " + std::to_string(kMaxNvmlEntries) + " entries";
        const char* words = error_string ? error_string(code) : nullptr;
        if (words && *words) return words;
        return "NVML error " + std::to_string(code);
    }
    bool has_mig() const {
        return get_mig_mode && get_max_mig_device_count && get_mig_device_handle;
    }
    bool has_events() const {
        return event_set_create && register_events && event_set_wait && event_set_free;
    }
};

namespace {

// dlsym with the test option of absent names; records the first required
// name that is missing.
class SymbolResolver {
  public:
    SymbolResolver(void* handle, const NvmlOpenOptions& options)
        : handle_(handle), options_(options) {}

    template <class Function>
    void required(Function& function, const std::string& name) {
        function = reinterpret_cast<Function>(lookup(name));
        if (!function && missing_.empty()) missing_ = name;
    }
    template <class Function>
    void optional(Function& function, const std::string& name) {
        function = reinterpret_cast<Function>(lookup(name));
    }
    // `base`_v3, else _v2, else the unsuffixed v1 entry point.
    void process_list(ProcessListCall& call, const std::string& base) {
        for (const char* suffix : {"_v3", "_v2"}) {
            call = {base + suffix, reinterpret_cast<AnyFunction>(lookup(base + suffix)),
                    ProcessLayout::v2};
            if (call.function) return;
        }
        call = {base, nullptr, ProcessLayout::v1};
        required(call.function, base);
    }
    const std::string& missing() const { return missing_; }

  private:
    void* lookup(const std::string& name) const {
        const auto& absent = options_.absent_symbols;
        if (std::find(absent.begin(), absent.end(), name) != absent.end()) return nullptr;
        return ::dlsym(handle_, name.c_str());
    }

    void* handle_;
    const NvmlOpenOptions& options_;
    std::string missing_;
};

Result<std::unique_ptr<NvmlLibrary::EntryPoints>> resolve_entry_points(
    void* handle, const NvmlOpenOptions& options) {
    auto nvml = std::make_unique<NvmlLibrary::EntryPoints>();
    SymbolResolver resolve(handle, options);
    resolve.required(nvml->init, "nvmlInit_v2");
    resolve.required(nvml->shutdown, "nvmlShutdown");
    resolve.required(nvml->get_count, "nvmlDeviceGetCount_v2");
    resolve.required(nvml->get_handle, "nvmlDeviceGetHandleByIndex_v2");
    resolve.required(nvml->get_name, "nvmlDeviceGetName");
    resolve.required(nvml->get_uuid, "nvmlDeviceGetUUID");
    resolve.required(nvml->get_pci_info, "nvmlDeviceGetPciInfo_v3");
    resolve.required(nvml->get_memory_info, "nvmlDeviceGetMemoryInfo");
    resolve.required(nvml->get_utilization, "nvmlDeviceGetUtilizationRates");
    resolve.process_list(nvml->compute_processes, "nvmlDeviceGetComputeRunningProcesses");
    resolve.process_list(nvml->graphics_processes, "nvmlDeviceGetGraphicsRunningProcesses");
    resolve.optional(nvml->error_string, "nvmlErrorString");
    resolve.optional(nvml->get_process_utilization, "nvmlDeviceGetProcessUtilization");
    resolve.optional(nvml->get_mig_mode, "nvmlDeviceGetMigMode");
    resolve.optional(nvml->get_max_mig_device_count, "nvmlDeviceGetMaxMigDeviceCount");
    resolve.optional(nvml->get_mig_device_handle, "nvmlDeviceGetMigDeviceHandleByIndex");
    resolve.optional(nvml->get_total_ecc_errors, "nvmlDeviceGetTotalEccErrors");
    resolve.optional(nvml->get_remapped_rows, "nvmlDeviceGetRemappedRows");
    resolve.optional(nvml->event_set_create, "nvmlEventSetCreate");
    resolve.optional(nvml->register_events, "nvmlDeviceRegisterEvents");
    resolve.optional(nvml->event_set_wait, "nvmlEventSetWait_v2");
    resolve.optional(nvml->event_set_free, "nvmlEventSetFree");
    if (!resolve.missing().empty())
        return plain_error("the NVML library has no " + resolve.missing());
    return nvml;
}

// Room for the entries that appear between two calls, up to the bound.
unsigned next_capacity(unsigned capacity, unsigned wanted) {
    uint64_t grown = std::max<uint64_t>(uint64_t{capacity} * 2, uint64_t{wanted} + wanted / 4);
    return static_cast<unsigned>(std::min<uint64_t>(grown, kMaxNvmlEntries));
}

// Calls `call(&count, buffer)` with a buffer grown on
// NVML_ERROR_INSUFFICIENT_SIZE (count then holds what NVML wants); `entries`
// ends with what NVML wrote. kTooManyEntries past kMaxNvmlEntries.
template <class Entry, class Call>
nvmlReturn_t call_growing(std::vector<Entry>& entries, Call call) {
    unsigned capacity = kFirstListGuess;
    while (true) {
        entries.assign(capacity, Entry{});
        unsigned count = capacity;
        nvmlReturn_t code = call(&count, entries.data());
        if (code == NVML_SUCCESS) {
            entries.resize(std::min(count, capacity));
            return code;
        }
        entries.clear();
        if (code != NVML_ERROR_INSUFFICIENT_SIZE) return code;
        if (capacity == kMaxNvmlEntries) return kTooManyEntries;
        capacity = next_capacity(capacity, count);
    }
}

template <class Info>
nvmlReturn_t list_processes_as(AnyFunction function, nvmlDevice_t device,
                               std::vector<ProcessFigure>& figures) {
    auto list = reinterpret_cast<nvmlReturn_t (*)(nvmlDevice_t, unsigned*, Info*)>(function);
    std::vector<Info> infos;
    nvmlReturn_t code = call_growing(
        infos, [&](unsigned* count, Info* buffer) { return list(device, count, buffer); });
    for (const Info& info : infos) figures.push_back({info.pid, info.usedGpuMemory});
    return code;
}

nvmlReturn_t list_processes(const ProcessListCall& call, nvmlDevice_t device,
                            std::vector<ProcessFigure>& figures) {
    if (call.layout == ProcessLayout::v1)
        return list_processes_as<nvmlProcessInfo_v1_t>(call.function, device, figures);
    return list_processes_as<nvmlProcessInfo_v2_t>(call.function, device, figures);
}

// The outcome of each call on one device, recorded where the contract puts
// it: GPU lost -> fault (and no further calls), not supported -> nothing,
// any other failure -> an `errors` entry; one that says the library is
// stale (means_stale) is also kept in stale().
class DeviceCalls {
  public:
    DeviceCalls(const NvmlLibrary::EntryPoints& nvml, GpuDevice& device,
                std::vector<std::string>& errors)
        : nvml_(nvml), device_(device), errors_(errors) {}

    bool lost() const { return lost_; }
    const std::string& stale() const { return stale_; }

    // Runs `call` unless the device is lost; true when it succeeded.
    template <class Call>
    bool run(std::string_view name, Call call) {
        return !lost() && ok(call(), name);
    }

    bool ok(nvmlReturn_t code, std::string_view name) {
        if (code == NVML_SUCCESS) return true;
        if (code == NVML_ERROR_GPU_IS_LOST) {
            lost_ = true;
            device_.fault = kGpuLost;
        } else if (code != NVML_ERROR_NOT_SUPPORTED) {
            errors_.push_back("device " + std::to_string(device_.index) + ": " + std::string(name) +
                              ": " + nvml_.text(code));
            if (means_stale(code) && stale_.empty())
                stale_ = std::string(name) + ": " + nvml_.text(code);
        }
        return false;
    }

  private:
    const NvmlLibrary::EntryPoints& nvml_;
    GpuDevice& device_;
    std::vector<std::string>& errors_;
    bool lost_ = false;
    std::string stale_;
};

template <size_t N>
std::string bounded_string(const char (&buffer)[N]) {
    return std::string(buffer, ::strnlen(buffer, N));
}

// NVML's "00000000:03:00.0" as the kernel writes it: "0000:03:00.0".
std::string normalized_pci_bus_id(const std::string& nvml_bus_id) {
    unsigned domain = 0, bus = 0, device = 0, function = 0;
    char rest = 0;
    if (std::sscanf(nvml_bus_id.c_str(), "%x:%x:%x.%x%c", &domain, &bus, &device, &function,
                    &rest) == 4) {
        char normal[32];
        std::snprintf(normal, sizeof normal, "%04x:%02x:%02x.%x", domain, bus, device, function);
        return normal;
    }
    std::string lower = nvml_bus_id;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return lower;
}

void read_identity(const NvmlLibrary::EntryPoints& nvml, nvmlDevice_t handle, DeviceCalls& calls,
                   GpuDevice& device) {
    nvmlPciInfo_t pci{};
    if (calls.run("nvmlDeviceGetPciInfo_v3", [&] { return nvml.get_pci_info(handle, &pci); }))
        device.pci_bus_id = normalized_pci_bus_id(bounded_string(pci.busId));
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
    if (calls.run("nvmlDeviceGetName", [&] { return nvml.get_name(handle, name, sizeof name); }))
        device.name = bounded_string(name);
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    if (calls.run("nvmlDeviceGetUUID", [&] { return nvml.get_uuid(handle, uuid, sizeof uuid); }))
        device.uuid = bounded_string(uuid);
}

void read_figures(const NvmlLibrary::EntryPoints& nvml, nvmlDevice_t handle, DeviceCalls& calls,
                  GpuDevice& device) {
    nvmlMemory_t memory{};
    if (calls.run("nvmlDeviceGetMemoryInfo",
                  [&] { return nvml.get_memory_info(handle, &memory); })) {
        device.memory_total = memory.total;
        device.memory_used = memory.used;
    }
    nvmlUtilization_t utilization{};
    if (calls.run("nvmlDeviceGetUtilizationRates",
                  [&] { return nvml.get_utilization(handle, &utilization); }))
        device.utilization = utilization.gpu;
}

// Why the card needs a reset or service, from the state its driver keeps:
// uncorrected ECC errors since the driver loaded (volatile counts, which a
// GPU reset clears), a row remap pending or failed. Empty when healthy or
// when the figures are unknown (no entry point, or NOT_SUPPORTED: no ECC).
std::string read_health(const NvmlLibrary::EntryPoints& nvml, nvmlDevice_t handle,
                        DeviceCalls& calls) {
    std::vector<std::string> faults;
    unsigned long long uncorrected = 0;
    if (nvml.get_total_ecc_errors &&
        calls.run("nvmlDeviceGetTotalEccErrors",
                  [&] {
                      return nvml.get_total_ecc_errors(handle, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                                                       NVML_VOLATILE_ECC, &uncorrected);
                  }) &&
        uncorrected > 0)
        faults.push_back(std::to_string(uncorrected) + " uncorrected ECC error" +
                         (uncorrected == 1 ? "" : "s") +
                         " since the driver loaded (reset the GPU)");
    unsigned corrected_rows = 0, uncorrected_rows = 0, pending = 0, failed = 0;
    if (nvml.get_remapped_rows && calls.run("nvmlDeviceGetRemappedRows", [&] {
            return nvml.get_remapped_rows(handle, &corrected_rows, &uncorrected_rows, &pending,
                                          &failed);
        })) {
        if (failed)
            faults.push_back("row remapping failed (the GPU needs service)");
        else if (pending)
            faults.push_back("a row remap is pending (reset the GPU)");
    }
    std::string fault;
    for (const auto& f : faults) fault += (fault.empty() ? "" : "; ") + f;
    return fault;
}

// pid -> bytes on one device: a pid in both lists once, with the larger
// figure; figures NVML does not have are left out.
using ProcessBytes = std::map<unsigned, uint64_t>;

ProcessBytes read_process_lists(const NvmlLibrary::EntryPoints& nvml, nvmlDevice_t handle,
                                DeviceCalls& calls, const std::string& where = "") {
    ProcessBytes bytes;
    for (const ProcessListCall* list : {&nvml.compute_processes, &nvml.graphics_processes}) {
        std::vector<ProcessFigure> figures;
        if (!calls.run(list->name + where, [&] { return list_processes(*list, handle, figures); }))
            continue;
        for (const ProcessFigure& figure : figures) {
            if (figure.used == NVML_VALUE_NOT_AVAILABLE_ULL) continue;
            bytes[figure.pid] = std::max<uint64_t>(bytes[figure.pid], figure.used);
        }
    }
    return bytes;
}

bool in_mig_mode(const NvmlLibrary::EntryPoints& nvml, nvmlDevice_t handle, DeviceCalls& calls) {
    if (!nvml.has_mig()) return false;
    unsigned current = 0, pending = 0;
    return calls.run("nvmlDeviceGetMigMode", [&] {
        return nvml.get_mig_mode(handle, &current, &pending);
    }) && current == NVML_DEVICE_MIG_ENABLE;
}

// The processes of each MIG device of a parent in MIG mode, summed per pid
// (a process on two MIG devices holds memory on both).
ProcessBytes read_mig_process_lists(const NvmlLibrary::EntryPoints& nvml, nvmlDevice_t parent,
                                    DeviceCalls& calls) {
    unsigned count = 0;
    if (!calls.run("nvmlDeviceGetMaxMigDeviceCount",
                   [&] { return nvml.get_max_mig_device_count(parent, &count); }))
        return {};
    ProcessBytes total;
    for (unsigned i = 0; i < std::min(count, kMaxMigDevices) && !calls.lost(); ++i) {
        nvmlDevice_t mig = nullptr;
        nvmlReturn_t code = nvml.get_mig_device_handle(parent, i, &mig);
        if (code == NVML_ERROR_NOT_FOUND) continue;  // no MIG device at this index
        if (!calls.ok(code, "nvmlDeviceGetMigDeviceHandleByIndex")) continue;
        std::string where = " (MIG device " + std::to_string(i) + ")";
        for (const auto& [pid, bytes] : read_process_lists(nvml, mig, calls, where))
            total[pid] += bytes;
    }
    return total;
}

// pid -> SM % of its newest sample after `last_seen`, which moves to the
// newest sample read. Samples over 100 % are dropped, as nvtop does (its
// issue #110: inconsistent samples).
std::map<unsigned, unsigned> newest_sm_utilization(
    const std::vector<nvmlProcessUtilizationSample_t>& samples, unsigned long long& last_seen) {
    std::map<unsigned, unsigned> sm;
    std::map<unsigned, unsigned long long> sample_time;
    const unsigned long long previous = last_seen;
    for (const auto& sample : samples) {
        if (sample.timeStamp <= previous || sample.smUtil > 100) continue;
        if (sample.timeStamp < sample_time[sample.pid]) continue;
        sample_time[sample.pid] = sample.timeStamp;
        sm[sample.pid] = sample.smUtil;
        last_seen = std::max(last_seen, sample.timeStamp);
    }
    return sm;
}

// Empty when there is no figure: no entry point, no sample since
// `last_seen` (NVML_ERROR_NOT_FOUND), or a failure (recorded).
std::optional<std::map<unsigned, unsigned>> read_process_utilization(
    const NvmlLibrary::EntryPoints& nvml, nvmlDevice_t handle, DeviceCalls& calls,
    unsigned long long& last_seen) {
    if (!nvml.get_process_utilization || calls.lost()) return std::nullopt;
    std::vector<nvmlProcessUtilizationSample_t> samples;
    nvmlReturn_t code =
        call_growing(samples, [&](unsigned* count, nvmlProcessUtilizationSample_t* buffer) {
            return nvml.get_process_utilization(handle, buffer, count, last_seen);
        });
    // NOT_FOUND: no sample since last_seen, i.e. no process used the
    // device: each one's figure is 0, not unknown (an idle worker reads 0%).
    if (code == NVML_ERROR_NOT_FOUND) return std::map<unsigned, unsigned>{};
    if (!calls.ok(code, "nvmlDeviceGetProcessUtilization")) return std::nullopt;
    return newest_sm_utilization(samples, last_seen);
}

void add_processes(const ProcessBytes& bytes,
                   const std::optional<std::map<unsigned, unsigned>>& utilization,
                   const GpuDevice& device, GpuSnapshot& snapshot) {
    for (const auto& [pid, memory] : bytes) {
        GpuProcessUse use;
        use.pid = static_cast<pid_t>(pid);
        use.pci_bus_id = device.pci_bus_id;
        use.memory = memory;
        if (utilization) {
            // NVML samples only processes with non-zero use since last_seen.
            auto it = utilization->find(pid);
            use.utilization = it == utilization->end() ? 0.0 : double(it->second);
        }
        snapshot.processes.push_back(std::move(use));
    }
}

std::string dl_error_text(const std::string& library) {
    const char* text = ::dlerror();
    return text ? std::string(text) : "dlopen " + library + " failed";
}

}  // namespace

Result<std::unique_ptr<NvmlLibrary>> NvmlLibrary::open(const std::string& library,
                                                       const NvmlOpenOptions& options) {
    void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) return plain_error(dl_error_text(library));
    auto entry_points = resolve_entry_points(handle, options);
    if (!entry_points) {
        ::dlclose(handle);
        return entry_points.error();
    }
    if (nvmlReturn_t code = (*entry_points)->init(); code != NVML_SUCCESS) {
        std::string text = "nvmlInit_v2: " + (*entry_points)->text(code);
        ::dlclose(handle);
        return plain_error(text);
    }
    auto opened = std::unique_ptr<NvmlLibrary>(new NvmlLibrary(handle, std::move(*entry_points)));
    opened->register_xid_events();
    return opened;
}

NvmlLibrary::NvmlLibrary(void* handle, std::unique_ptr<EntryPoints> entry_points)
    : handle_(handle), nvml_(std::move(entry_points)) {}

NvmlLibrary::~NvmlLibrary() { close(); }

void NvmlLibrary::close() {
    if (!handle_) return;
    if (event_set_) nvml_->event_set_free(static_cast<nvmlEventSet_t>(event_set_));
    event_set_ = nullptr;
    nvml_->shutdown();
    ::dlclose(handle_);
    handle_ = nullptr;
}

// Every device's Xid events into one set. A device that cannot report them
// (NOT_SUPPORTED: older or consumer GPUs) is left out silently; another
// failure is an error of the first read(). No device registered: no set.
void NvmlLibrary::register_xid_events() {
    if (!nvml_->has_events()) return;
    nvmlEventSet_t set = nullptr;
    unsigned count = 0;
    if (nvmlReturn_t code = nvml_->event_set_create(&set); code != NVML_SUCCESS) {
        if (code != NVML_ERROR_NOT_SUPPORTED)
            open_errors_.push_back("nvmlEventSetCreate: " + nvml_->text(code));
        return;
    }
    bool any = false;
    if (nvml_->get_count(&count) == NVML_SUCCESS)
        for (unsigned index = 0; index < std::min(count, kMaxDevices); ++index) {
            nvmlDevice_t device = nullptr;
            if (nvml_->get_handle(index, &device) != NVML_SUCCESS) continue;
            nvmlReturn_t code = nvml_->register_events(device, nvmlEventTypeXidCriticalError, set);
            if (code == NVML_SUCCESS)
                any = true;
            else if (code != NVML_ERROR_NOT_SUPPORTED && code != NVML_ERROR_GPU_IS_LOST)
                open_errors_.push_back("device " + std::to_string(index) +
                                       ": nvmlDeviceRegisterEvents: " + nvml_->text(code));
        }
    if (any)
        event_set_ = set;
    else
        nvml_->event_set_free(set);
}

GpuSnapshot NvmlLibrary::read() {
    GpuSnapshot snapshot;
    if (!handle_) {
        snapshot.errors.push_back("NVML: closed");
        return snapshot;
    }
    snapshot.errors = std::move(open_errors_);
    open_errors_.clear();
    unsigned count = 0;
    if (nvmlReturn_t code = nvml_->get_count(&count); code != NVML_SUCCESS) {
        snapshot.errors.push_back("nvmlDeviceGetCount_v2: " + nvml_->text(code));
        if (means_stale(code)) stale_ = snapshot.errors.back();
        return snapshot;
    }
    if (count > kMaxDevices)
        snapshot.errors.push_back("nvmlDeviceGetCount_v2: " + std::to_string(count) +
                                  " devices, the first " + std::to_string(kMaxDevices) + " read");
    unsigned stale_devices = 0;
    std::string why_stale;
    for (unsigned index = 0; index < std::min(count, kMaxDevices); ++index) {
        std::string why = read_device(index, snapshot);
        if (why.empty()) continue;
        ++stale_devices;
        if (why_stale.empty()) why_stale = "device " + std::to_string(index) + ": " + why;
    }
    if (count > 0 && stale_devices == std::min(count, kMaxDevices)) stale_ = why_stale;
    drain_xid_events(snapshot);
    return snapshot;
}

void NvmlLibrary::drain_xid_events(GpuSnapshot& snapshot) {
    if (!event_set_) return;
    for (unsigned i = 0; i < kMaxXidEventsPerRead; ++i) {
        nvmlEventData_t data{};
        nvmlReturn_t code =
            nvml_->event_set_wait(static_cast<nvmlEventSet_t>(event_set_), &data, 0);
        if (code == NVML_ERROR_TIMEOUT) return;  // none left
        if (code != NVML_SUCCESS) {
            if (code != NVML_ERROR_GPU_IS_LOST)  // a lost card's fault says it
                snapshot.errors.push_back("nvmlEventSetWait_v2: " + nvml_->text(code));
            return;
        }
        if (!(data.eventType & nvmlEventTypeXidCriticalError)) continue;
        auto bus_id = bus_ids_.find(data.device);
        snapshot.xids.push_back(
            {bus_id == bus_ids_.end() ? std::string() : bus_id->second, data.eventData});
    }
}

std::string NvmlLibrary::read_device(unsigned index, GpuSnapshot& snapshot) {
    GpuDevice device;
    device.index = index;
    device.vendor = "nvidia";
    DeviceCalls calls(*nvml_, device, snapshot.errors);
    nvmlDevice_t handle = nullptr;
    std::string health;
    if (calls.ok(nvml_->get_handle(index, &handle), "nvmlDeviceGetHandleByIndex_v2")) {
        read_identity(*nvml_, handle, calls, device);
        if (!device.pci_bus_id.empty()) bus_ids_[handle] = device.pci_bus_id;
        read_figures(*nvml_, handle, calls, device);
        health = read_health(*nvml_, handle, calls);
        if (in_mig_mode(*nvml_, handle, calls)) {
            // Per-process utilization is not supported in MIG mode (nvml.h).
            add_processes(read_mig_process_lists(*nvml_, handle, calls), std::nullopt, device,
                          snapshot);
        } else {
            ProcessBytes bytes = read_process_lists(*nvml_, handle, calls);
            auto utilization =
                read_process_utilization(*nvml_, handle, calls, last_sample_time_[index]);
            add_processes(bytes, utilization, device, snapshot);
        }
    }
    if (device.fault.empty()) device.fault = health;
    // A device without a handle is listed only when it is lost: the
    // fault says what is wrong with it; other failures are in `errors`.
    if (handle || calls.lost()) snapshot.devices.push_back(std::move(device));
    return calls.stale();
}

}  // namespace infervisor
