// A stand-in libnvidia-ml for the tests of gpu/nvml_library.h: the entry
// points NvmlLibrary resolves, answering from a fixture file named by the
// environment variable FAKE_NVML_FIXTURE. The file is read at nvmlInit_v2 and
// again at every nvmlDeviceGetCount_v2, so a test changes what the next
// read() sees by rewriting it. No unset variable or unreadable file: no
// devices. A line the fake does not understand makes nvmlInit_v2 and
// nvmlDeviceGetCount_v2 answer NVML_ERROR_UNKNOWN (and is printed on stderr).
//
// Fixture lines ('#' starts a comment; fields key=value, any order):
//   init_fails CODE              nvmlInit_v2 answers CODE
//   stale CODE                   nvmlInit_v2, nvmlDeviceGetCount_v2 and every device's
//                                calls answer CODE (a driver unloaded, 9, or upgraded, 18)
//   device I name=NVIDIA_H100 uuid=GPU-1 pci=00000000:03:00.0 total=B used=B util=P mig=N
//                                device I ('_' in name is a space); mig=N: MIG mode with
//                                N MIG devices; ecc=N: N volatile uncorrected ECC errors;
//                                remap=pending|failed: nvmlDeviceGetRemappedRows says so
//   process I pid=P kind=compute|graphics used=B|na sm=P ts=T mig=M
//                                a process on device I (on its MIG device M); used=na is
//                                NVML_VALUE_NOT_AVAILABLE; sm=P ts=T: a utilization sample
//                                of P % at CPU time T (default 1)
//   lost I                       every call on device I but the handle's: GPU_IS_LOST
//   xid I CODE                   an Xid CODE event on device I; each xid line of the file
//                                is delivered once (by its position: append to add more);
//                                those in the file when the event set is made are not
//   fail I CALL CODE             device I's CALL answers CODE; CALL is one of handle,
//                                pci, name, uuid, memory, utilization, compute, graphics,
//                                mig_mode, process_utilization, ecc, remap, register
//
// Plain C ABI; the structs are declared here from nvml.h (NVIDIA/go-nvml,
// pkg/nvml/nvml.h), independently of the daemon's declarations, so that a
// layout mistake on either side shows. No exception leaves an entry point.
#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using nvmlReturn_t = int;
constexpr nvmlReturn_t kSuccess = 0;
constexpr nvmlReturn_t kInvalidArgument = 2;
constexpr nvmlReturn_t kNotSupported = 3;
constexpr nvmlReturn_t kNotFound = 6;
constexpr nvmlReturn_t kInsufficientSize = 7;
constexpr nvmlReturn_t kTimeout = 10;
constexpr nvmlReturn_t kGpuIsLost = 15;
constexpr nvmlReturn_t kUnknown = 999;
constexpr unsigned kMaxDevices = 16;
constexpr unsigned kMaxMig = 8;

struct PciInfo {
    char busIdLegacy[16];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    char busId[32];
};
struct Memory {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
};
struct Utilization {
    unsigned int gpu;
    unsigned int memory;
};
struct ProcessInfoV1 {
    unsigned int pid;
    unsigned long long usedGpuMemory;
};
struct ProcessInfoV2 {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
};
struct ProcessUtilizationSample {
    unsigned int pid;
    unsigned long long timeStamp;
    unsigned int smUtil;
    unsigned int memUtil;
    unsigned int encUtil;
    unsigned int decUtil;
};

struct EventData {
    void* device;
    unsigned long long eventType;
    unsigned long long eventData;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
};

struct FakeDevice {
    std::string name, uuid, pci;
    unsigned long long total = 0, used = 0;
    unsigned util = 0;
    unsigned mig_count = 0;
    unsigned long long ecc = 0;
    std::string remap;
    bool lost = false;
    std::map<std::string, nvmlReturn_t> failures;  // call -> code
};

struct FakeProcess {
    unsigned device = 0;
    int mig = -1;
    unsigned pid = 0;
    bool graphics = false;
    unsigned long long used = 0;
    bool sampled = false;
    unsigned sm = 0;
    unsigned long long time = 1;
};

struct FakeXid {
    unsigned device = 0;
    unsigned long long code = 0;
};

struct Fixture {
    bool bad = false;
    nvmlReturn_t init_code = kSuccess;
    nvmlReturn_t stale_code = kSuccess;
    std::vector<FakeXid> xids;
    std::vector<FakeDevice> devices;
    std::vector<FakeProcess> processes;
};

Fixture fixture;
// Xid lines already delivered, over the file's rewrites; devices registered.
size_t xids_delivered = 0;
bool registered[kMaxDevices] = {};
int event_set_object = 0;  // the one event set handed out

}  // namespace

// The opaque handle NVML hands out: a device, or one of its MIG devices.
struct nvmlDevice_st {
    unsigned device;
    int mig;  // -1: the parent
};

namespace {

nvmlDevice_st handles[kMaxDevices][kMaxMig + 1];

std::map<std::string, std::string> fields_of(std::istringstream& line) {
    std::map<std::string, std::string> fields;
    std::string word;
    while (line >> word) {
        auto eq = word.find('=');
        fields[word.substr(0, eq)] = eq == std::string::npos ? "" : word.substr(eq + 1);
    }
    return fields;
}

unsigned long long number(const std::map<std::string, std::string>& fields, const char* key,
                          unsigned long long fallback = 0) {
    auto it = fields.find(key);
    if (it == fields.end()) return fallback;
    if (it->second == "na") return ULLONG_MAX;
    return std::strtoull(it->second.c_str(), nullptr, 0);
}

std::string text(const std::map<std::string, std::string>& fields, const char* key) {
    auto it = fields.find(key);
    std::string value = it == fields.end() ? "" : it->second;
    for (char& c : value)
        if (c == '_') c = ' ';
    return value;
}

FakeDevice& device_at(Fixture& f, unsigned index) {
    if (index >= kMaxDevices) throw std::out_of_range("device index");
    if (f.devices.size() <= index) f.devices.resize(index + 1);
    return f.devices[index];
}

void parse_device(Fixture& f, unsigned index, std::istringstream& line) {
    auto fields = fields_of(line);
    FakeDevice& d = device_at(f, index);
    d.name = text(fields, "name");
    d.uuid = fields["uuid"];
    d.pci = fields["pci"];
    d.total = number(fields, "total");
    d.used = number(fields, "used");
    d.util = static_cast<unsigned>(number(fields, "util"));
    d.mig_count = static_cast<unsigned>(number(fields, "mig"));
    d.ecc = number(fields, "ecc");
    d.remap = fields["remap"];
    if (d.mig_count > kMaxMig) throw std::out_of_range("mig count");
}

void parse_process(Fixture& f, unsigned index, std::istringstream& line) {
    auto fields = fields_of(line);
    device_at(f, index);
    FakeProcess p;
    p.device = index;
    p.mig = fields.count("mig") ? static_cast<int>(number(fields, "mig")) : -1;
    p.pid = static_cast<unsigned>(number(fields, "pid"));
    p.graphics = fields["kind"] == "graphics";
    p.used = number(fields, "used");
    p.sampled = fields.count("sm") != 0;
    p.sm = static_cast<unsigned>(number(fields, "sm"));
    p.time = number(fields, "ts", 1);
    f.processes.push_back(p);
}

bool parse_line(Fixture& f, const std::string& raw) {
    std::istringstream line(raw.substr(0, raw.find('#')));
    std::string directive;
    if (!(line >> directive)) return true;
    unsigned index = 0;
    if (directive == "init_fails") return static_cast<bool>(line >> f.init_code);
    if (directive == "stale") return static_cast<bool>(line >> f.stale_code);
    if (!(line >> index)) return false;
    if (directive == "device")
        parse_device(f, index, line);
    else if (directive == "process")
        parse_process(f, index, line);
    else if (directive == "lost")
        device_at(f, index).lost = true;
    else if (directive == "xid") {
        FakeXid x{index, 0};
        if (!(line >> x.code)) return false;
        device_at(f, index);
        f.xids.push_back(x);
    } else if (directive == "fail") {
        std::string call;
        nvmlReturn_t code = 0;
        if (!(line >> call >> code)) return false;
        device_at(f, index).failures[call] = code;
    } else
        return false;
    return true;
}

void load_fixture() {
    Fixture loaded;
    const char* path = std::getenv("FAKE_NVML_FIXTURE");
    try {
        std::ifstream in(path ? path : "");
        std::string line;
        while (std::getline(in, line)) {
            if (parse_line(loaded, line)) continue;
            std::fprintf(stderr, "fake_nvml: bad fixture line: %s\n", line.c_str());
            loaded.bad = true;
        }
    } catch (...) {
        loaded.bad = true;
    }
    fixture = std::move(loaded);
}

// The device behind a handle, or the code its `call` answers.
nvmlReturn_t check(nvmlDevice_st* handle, const char* call, const FakeDevice** device) {
    if (fixture.stale_code) return fixture.stale_code;
    if (!handle || handle->device >= fixture.devices.size()) return kInvalidArgument;
    const FakeDevice& d = fixture.devices[handle->device];
    if (d.lost) return kGpuIsLost;
    auto failure = d.failures.find(call);
    if (failure != d.failures.end()) return failure->second;
    *device = &d;
    return kSuccess;
}

nvmlReturn_t copy_text(const std::string& value, char* buffer, unsigned length) {
    if (!buffer || value.size() + 1 > length) return kInsufficientSize;
    std::memcpy(buffer, value.c_str(), value.size() + 1);
    return kSuccess;
}

// The parent lists all its processes (NVML's aggregate in MIG mode); a MIG
// device lists its own.
bool listed_on(const FakeProcess& p, const nvmlDevice_st* handle, bool graphics) {
    return p.device == handle->device && p.graphics == graphics &&
           (handle->mig < 0 || p.mig == handle->mig);
}

template <class Info>
nvmlReturn_t list_processes(nvmlDevice_st* handle, unsigned* count, Info* infos, bool graphics) {
    const FakeDevice* device = nullptr;
    if (nvmlReturn_t code = check(handle, graphics ? "graphics" : "compute", &device)) return code;
    if (!count) return kInvalidArgument;
    std::vector<Info> listed;
    for (const FakeProcess& p : fixture.processes)
        if (listed_on(p, handle, graphics)) {
            Info info{};
            info.pid = p.pid;
            info.usedGpuMemory = p.used;
            listed.push_back(info);
        }
    unsigned capacity = *count;
    *count = static_cast<unsigned>(listed.size());
    if (capacity < listed.size() || (!infos && !listed.empty())) return kInsufficientSize;
    std::copy(listed.begin(), listed.end(), infos);
    return kSuccess;
}

template <class Info>
nvmlReturn_t guarded_list(nvmlDevice_st* handle, unsigned* count, Info* infos, bool graphics) {
    try {
        return list_processes(handle, count, infos, graphics);
    } catch (...) {
        return kUnknown;
    }
}

nvmlReturn_t process_samples(nvmlDevice_st* handle, ProcessUtilizationSample* samples,
                             unsigned* count, unsigned long long last_seen) {
    const FakeDevice* device = nullptr;
    if (nvmlReturn_t code = check(handle, "process_utilization", &device)) return code;
    if (!count) return kInvalidArgument;
    if (device->mig_count) return kNotSupported;
    std::vector<ProcessUtilizationSample> found;
    for (const FakeProcess& p : fixture.processes)
        if (p.device == handle->device && p.sampled && p.time > last_seen)
            found.push_back({p.pid, p.time, p.sm, 0, 0, 0});
    if (found.empty()) return kNotFound;
    unsigned capacity = *count;
    *count = static_cast<unsigned>(found.size());
    if (!samples || capacity < found.size()) return kInsufficientSize;
    std::copy(found.begin(), found.end(), samples);
    return kSuccess;
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlInit_v2() {
    load_fixture();
    if (fixture.bad) return kUnknown;
    if (fixture.stale_code) return fixture.stale_code;
    return fixture.init_code;
}

nvmlReturn_t nvmlShutdown() { return kSuccess; }

const char* nvmlErrorString(nvmlReturn_t code) {
    switch (code) {
        case kSuccess:
            return "Success";
        case kInvalidArgument:
            return "Invalid Argument";
        case kNotSupported:
            return "Not Supported";
        case 4:
            return "Insufficient Permissions";
        case kNotFound:
            return "Not Found";
        case kInsufficientSize:
            return "Insufficient Size";
        case 1:
            return "Uninitialized";
        case 9:
            return "Driver Not Loaded";
        case kTimeout:
            return "Timeout";
        case 18:
            return "RM has detected an NVML/RM version mismatch";
        case kGpuIsLost:
            return "GPU is lost";
        default:
            return "Unknown Error";
    }
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned* count) {
    load_fixture();
    if (fixture.bad) return kUnknown;
    if (fixture.stale_code) return fixture.stale_code;
    if (!count) return kInvalidArgument;
    *count = static_cast<unsigned>(fixture.devices.size());
    return kSuccess;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_st** handle) {
    if (fixture.stale_code) return fixture.stale_code;
    if (index >= fixture.devices.size() || !handle) return kInvalidArgument;
    auto failure = fixture.devices[index].failures.find("handle");
    if (failure != fixture.devices[index].failures.end()) return failure->second;
    handles[index][0] = {index, -1};
    *handle = &handles[index][0];
    return kSuccess;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_st* handle, char* name, unsigned length) {
    const FakeDevice* d = nullptr;
    if (nvmlReturn_t code = check(handle, "name", &d)) return code;
    return copy_text(d->name, name, length);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_st* handle, char* uuid, unsigned length) {
    const FakeDevice* d = nullptr;
    if (nvmlReturn_t code = check(handle, "uuid", &d)) return code;
    return copy_text(d->uuid, uuid, length);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_st* handle, PciInfo* pci) {
    const FakeDevice* d = nullptr;
    if (nvmlReturn_t code = check(handle, "pci", &d)) return code;
    if (!pci) return kInvalidArgument;
    *pci = PciInfo{};
    return copy_text(d->pci, pci->busId, sizeof pci->busId);
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_st* handle, Memory* memory) {
    const FakeDevice* d = nullptr;
    if (nvmlReturn_t code = check(handle, "memory", &d)) return code;
    if (!memory) return kInvalidArgument;
    *memory = {d->total, d->total - d->used, d->used};
    return kSuccess;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_st* handle, Utilization* utilization) {
    const FakeDevice* d = nullptr;
    if (nvmlReturn_t code = check(handle, "utilization", &d)) return code;
    if (!utilization) return kInvalidArgument;
    if (d->mig_count) return kNotSupported;
    *utilization = {d->util, 0};
    return kSuccess;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_st* h, unsigned* n,
                                                     ProcessInfoV2* infos) {
    return guarded_list(h, n, infos, false);
}
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_st* h, unsigned* n,
                                                     ProcessInfoV2* infos) {
    return guarded_list(h, n, infos, false);
}
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_st* h, unsigned* n,
                                                  ProcessInfoV1* infos) {
    return guarded_list(h, n, infos, false);
}
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_st* h, unsigned* n,
                                                      ProcessInfoV2* infos) {
    return guarded_list(h, n, infos, true);
}
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_st* h, unsigned* n,
                                                      ProcessInfoV2* infos) {
    return guarded_list(h, n, infos, true);
}
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_st* h, unsigned* n,
                                                   ProcessInfoV1* infos) {
    return guarded_list(h, n, infos, true);
}

nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_st* handle,
                                             ProcessUtilizationSample* samples, unsigned* count,
                                             unsigned long long last_seen) {
    try {
        return process_samples(handle, samples, count, last_seen);
    } catch (...) {
        return kUnknown;
    }
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_st* handle, unsigned* current, unsigned* pending) {
    const FakeDevice* d = nullptr;
    if (nvmlReturn_t code = check(handle, "mig_mode", &d)) return code;
    if (!current || !pending) return kInvalidArgument;
    if (!d->mig_count) return kNotSupported;
    *current = *pending = 1;
    return kSuccess;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_st* handle, unsigned* count) {
    const FakeDevice* d = nullptr;
    if (nvmlReturn_t code = check(handle, "mig_mode", &d)) return code;
    if (!count) return kInvalidArgument;
    *count = d->mig_count ? kMaxMig : 0;  // NVML's maximum, not the MIG devices made
    return kSuccess;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_st* handle, unsigned index,
                                                 nvmlDevice_st** mig) {
    const FakeDevice* d = nullptr;
    if (nvmlReturn_t code = check(handle, "mig_mode", &d)) return code;
    if (!mig || index >= kMaxMig) return kInvalidArgument;
    if (index >= d->mig_count) return kNotFound;
    nvmlDevice_st& slot = handles[handle->device][index + 1];
    slot = {handle->device, static_cast<int>(index)};
    *mig = &slot;
    return kSuccess;
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_st* handle, int error_type, int counter_type,
                                         unsigned long long* count) {
    const FakeDevice* d = nullptr;
    if (nvmlReturn_t code = check(handle, "ecc", &d)) return code;
    if (!count || error_type != 1 || counter_type != 0) return kInvalidArgument;  // the fake's
    *count = d->ecc;
    return kSuccess;
}

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_st* handle, unsigned* corrected,
                                       unsigned* uncorrected, unsigned* pending, unsigned* failed) {
    const FakeDevice* d = nullptr;
    if (nvmlReturn_t code = check(handle, "remap", &d)) return code;
    if (!corrected || !uncorrected || !pending || !failed) return kInvalidArgument;
    *corrected = *uncorrected = 0;
    *pending = d->remap == "pending";
    *failed = d->remap == "failed";
    return kSuccess;
}

nvmlReturn_t nvmlEventSetCreate(void** set) {
    if (!set) return kInvalidArgument;
    std::fill(std::begin(registered), std::end(registered), false);
    xids_delivered = fixture.xids.size();  // events before the set are not in it
    *set = &event_set_object;
    return kSuccess;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_st* handle, unsigned long long types, void* set) {
    const FakeDevice* d = nullptr;
    if (nvmlReturn_t code = check(handle, "register", &d)) return code;
    if (set != &event_set_object || types != 0x8) return kInvalidArgument;
    registered[handle->device] = true;
    return kSuccess;
}

// The next Xid line not delivered yet, on a registered device.
nvmlReturn_t nvmlEventSetWait_v2(void* set, EventData* data, unsigned timeout_ms) {
    if (set != &event_set_object || !data || timeout_ms != 0) return kInvalidArgument;
    if (fixture.stale_code) return fixture.stale_code;
    while (xids_delivered < fixture.xids.size()) {
        const FakeXid& x = fixture.xids[xids_delivered++];
        if (x.device >= kMaxDevices || !registered[x.device]) continue;
        handles[x.device][0] = {x.device, -1};
        *data = {&handles[x.device][0], 0x8, x.code, 0xFFFFFFFFu, 0xFFFFFFFFu};
        return kSuccess;
    }
    return kTimeout;
}

nvmlReturn_t nvmlEventSetFree(void* set) {
    if (set != &event_set_object) return kInvalidArgument;
    std::fill(std::begin(registered), std::end(registered), false);
    return kSuccess;
}

}  // extern "C"
