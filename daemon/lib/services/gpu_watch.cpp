#include "services/gpu_watch.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>

#include "base/units.h"
#include "cgroup/cgroup_dir.h"
#include "gpu/drm_fdinfo.h"
#include "gpu/gpu_assignment.h"
#include "gpu/nvidia_xid.h"
#include "gpu/nvml_library.h"

namespace infervisor {

namespace {

// The most processes of one worker whose DRM fds a reading looks at: a
// worker that forks thousands must not make every reading late.
constexpr size_t kMaxDrmPidsPerWorker = 256;

void append(GpuSnapshot& to, GpuSnapshot from) {
    for (auto& d : from.devices) to.devices.push_back(std::move(d));
    for (auto& p : from.processes) to.processes.push_back(std::move(p));
    for (auto& e : from.errors) to.errors.push_back(std::move(e));
}

DrmRoots drm_roots(const Paths& paths) { return DrmRoots{paths.procfs, paths.sysfs}; }

}  // namespace

GpuReading read_gpus(NvmlLibrary* nvml, DrmUsageReader* drm, const Paths& paths,
                     const std::vector<std::filesystem::path>& worker_cgroups, TimePoint now) {
    GpuReading reading;
    reading.time = now;
    if (nvml) {
        reading.snapshot = nvml->read();
        reading.nvml_stale = nvml->stale();
        if (!reading.nvml_stale.empty()) nvml->close();  // here: NVML calls may block
    }
    if (drm) {
        std::vector<pid_t> pids;
        for (const auto& cgroup : worker_cgroups)
            for (pid_t pid : CgroupDir(cgroup).procs_up_to(kMaxDrmPidsPerWorker))
                pids.push_back(pid);
        append(reading.snapshot, drm->read(pids, now));
    }
    tag_cgroups(paths.procfs, reading);
    return reading;
}

GpuWatch::GpuWatch(boost::asio::io_context& io, const Paths& paths, const Clock& clock,
                   EventBus* events)
    : paths_(paths), clock_(clock), events_(events), background_(io) {}

GpuWatch::~GpuWatch() = default;

void GpuWatch::refresh(std::vector<std::filesystem::path> worker_cgroups, Duration min_gap) {
    if (reading_) return;
    TimePoint now = clock_.now();
    if (nvml_closed_at_) {
        if (now - *nvml_closed_at_ >= kReopenInterval) return reopen_nvml();
        if (!drm_) return;  // nothing to read until then
    } else if (!active()) {
        if (!opened_at_ || now - *opened_at_ >= kReopenInterval) open_sources();
        return;
    }
    if (began_ && now - *began_ < min_gap) return;
    began_ = now;
    reading_ = true;
    background_.run<GpuReading>(
        [nvml = nvml_.get(), drm = drm_.get(), paths = paths_, cgroups = std::move(worker_cgroups),
         now] { return read_gpus(nvml, drm, paths, cgroups, now); },
        [this](GpuReading reading) {
            reading_ = false;
            if (!reading.nvml_stale.empty()) {
                nvml_.reset();  // closed by the job
                nvml_closed_at_ = clock_.now();
                spdlog::warn(
                    "NVML answers as if the NVIDIA driver was unloaded or upgraded ({}): "
                    "closed, opened again every {}",
                    reading.nvml_stale, format_duration(kReopenInterval));
            }
            take(std::move(reading));
        });
}

void GpuWatch::reopen_nvml() {
    reading_ = true;
    nvml_closed_at_ = clock_.now();
    background_.run<std::shared_ptr<Sources>>(
        [paths = paths_] {
            auto sources = std::make_shared<Sources>();
            if (auto nvml = NvmlLibrary::open(paths.nvml_library))
                sources->nvml = std::move(*nvml);
            else
                sources->why_no_nvml = nvml.error().message();
            return sources;
        },
        [this](std::shared_ptr<Sources> sources) {
            reading_ = false;
            if (!sources->nvml) {
                spdlog::debug("NVML not opened again yet: {}", sources->why_no_nvml);
                return;
            }
            nvml_ = std::move(sources->nvml);
            nvml_closed_at_.reset();
            began_.reset();  // the next refresh() reads
            spdlog::info("NVML opened again");
        });
}

void GpuWatch::open_sources() {
    reading_ = true;
    opened_at_ = clock_.now();
    background_.run<std::shared_ptr<Sources>>(
        [paths = paths_, now = *opened_at_] {
            auto sources = std::make_shared<Sources>();
            if (auto nvml = NvmlLibrary::open(paths.nvml_library))
                sources->nvml = std::move(*nvml);
            else
                sources->why_no_nvml = nvml.error().message();
            if (has_drm_gpus(drm_roots(paths)))
                sources->drm = std::make_unique<DrmUsageReader>(drm_roots(paths));
            if (sources->nvml || sources->drm)
                sources->first = read_gpus(sources->nvml.get(), sources->drm.get(), paths, {}, now);
            return sources;
        },
        [this](std::shared_ptr<Sources> sources) {
            reading_ = false;
            adopt(std::move(*sources));
        });
}

void GpuWatch::adopt(Sources sources) {
    const bool first_time = !opened_;
    opened_ = true;
    if (sources.first && !sources.first->nvml_stale.empty()) {  // closed by the job
        sources.nvml.reset();
        nvml_closed_at_ = clock_.now();
    }
    nvml_ = std::move(sources.nvml);
    drm_ = std::move(sources.drm);
    if (!active()) {
        why_none_ = "no GPU is read on this host (no NVIDIA library: " + sources.why_no_nvml +
                    "; no AMD or Intel GPU in " + (paths_.sysfs / "class/drm").string() + ")";
        if (first_time) spdlog::info("no GPU figures: {}", why_none_);
        return;
    }
    why_none_.clear();
    take(std::move(*sources.first));
    began_ = last_->time;
    spdlog::info("GPUs: {}{}", describe_gpus(last_->snapshot.devices),
                 nvml_ ? "" : " (no NVIDIA library: " + sources.why_no_nvml + ")");
}

// A card's key: its PCI address, or for one whose driver no longer answers
// even that (NVML's "GPU is lost"), the address it had when last seen at
// the same index; "nvidia 0" when it never answered.
std::string GpuWatch::key_of(GpuDevice& d) const {
    if (!d.pci_bus_id.empty()) return d.pci_bus_id;
    for (const auto& [pci, was] : seen_)
        if (was.vendor == d.vendor && was.index == d.index) {
            d.pci_bus_id = was.pci_bus_id;
            return pci;
        }
    return d.vendor + " " + std::to_string(d.index);
}

void GpuWatch::take(GpuReading reading) {
    // A card first seen lost (no address: "nvidia 0") that answers now is
    // the same card: its entry moves to its address.
    for (const auto& d : reading.snapshot.devices) {
        std::string unknown = d.vendor + " " + std::to_string(d.index);
        auto it = seen_.find(unknown);
        if (d.pci_bus_id.empty() || seen_.contains(d.pci_bus_id) || it == seen_.end()) continue;
        seen_.emplace(d.pci_bus_id, std::move(it->second));
        seen_.erase(it);
    }
    std::map<std::string, GpuDevice> now;
    for (auto& d : reading.snapshot.devices) {
        std::string key = key_of(d);
        if (auto was = seen_.find(key); was != seen_.end()) {  // what it could not say now
            if (d.name.empty()) d.name = was->second.name;
            if (d.uuid.empty() && !was->second.uuid.empty()) {
                d.uuid = was->second.uuid;
                d.uuid_unreadable = false;
            }
        }
        missing_.erase(key);
        now.emplace(std::move(key), d);
    }
    for (auto& [key, was] : seen_) {
        if (now.contains(key)) continue;
        GpuDevice kept = was;
        // Without NVML its cards are not listed: in error at once.
        const bool unread = was.vendor == "nvidia" && !nvml_;
        if ((++missing_[key] >= 2 || unread) && kept.fault.empty()) {
            kept.fault = unread ? "its driver does not answer NVML (reloaded or upgraded?)"
                                : "no longer listed by its driver (fallen off the bus?)";
            kept.memory_used.reset();  // nothing is known of it now
            kept.utilization.reset();
        }
        now.emplace(key, std::move(kept));
    }
    for (auto& [key, d] : now) {
        auto it = seen_.find(key);
        const std::string before = it == seen_.end() ? std::string() : it->second.fault;
        if (d.fault == before || !events_) continue;
        std::string what = key + (d.name.empty() ? "" : " (" + d.name + ")");
        if (!d.fault.empty())
            events_->emit(
                Event{EventKind::gpu_fault,
                      "",
                      "GPU " + what + " is in error: " + d.fault,
                      {{"GPU_DEVICE", key}, {"GPU_NAME", d.name}, {"GPU_FAULT", d.fault}}});
        else
            events_->emit(Event{EventKind::gpu_recovered,
                                "",
                                "GPU " + what + " answers again",
                                {{"GPU_DEVICE", key}, {"GPU_NAME", d.name}}});
    }
    for (const auto& e : reading.snapshot.errors)
        if (!last_ || std::find(last_->snapshot.errors.begin(), last_->snapshot.errors.end(), e) ==
                          last_->snapshot.errors.end())
            spdlog::warn("GPU reading: {}", e);
    seen_ = std::move(now);
    take_xids(reading);
    last_ = std::move(reading);
}

// Journaled and counted once each; the card's name from what was seen.
void GpuWatch::take_xids(const GpuReading& reading) {
    for (const GpuXid& x : reading.snapshot.xids) {
        std::string key = x.pci_bus_id.empty() ? "unknown" : x.pci_bus_id;
        ++xid_counts_[{key, x.xid}];
        if (!events_) continue;
        std::string name;
        if (auto it = seen_.find(key); it != seen_.end()) name = it->second.name;
        std::string meaning(xid_meaning(x.xid));
        std::string code = std::to_string(x.xid);
        events_->emit(Event{EventKind::gpu_xid,
                            "",
                            "GPU " + key + (name.empty() ? "" : " (" + name + ")") +
                                " reported Xid " + code + (meaning.empty() ? "" : ": " + meaning),
                            {{"GPU_DEVICE", key},
                             {"GPU_NAME", name},
                             {"GPU_XID", code},
                             {"GPU_XID_MEANING", meaning}}});
    }
}

std::optional<std::vector<GpuDevice>> GpuWatch::devices() const {
    if (!watching() || !last_) return std::nullopt;
    std::vector<GpuDevice> out;
    for (const auto& [key, d] : seen_) {
        out.push_back(d);  // with the gone ones, in error
        if (out.back().pci_bus_id.empty()) out.back().pci_bus_id = key;  // "nvidia 0"
    }
    return out;
}

Result<std::vector<GpuDevice>> GpuWatch::devices_for_start() const {
    if (!opened_) return Error{EWOULDBLOCK, "the host's GPUs are being looked for"};
    if (!watching())
        return Error{EWOULDBLOCK,
                     why_none_ + "; looked for again every " + format_duration(kReopenInterval)};
    return *devices();
}

bool GpuWatch::fresh(Duration max_age) const {
    return last_ && clock_.now() - last_->time <= max_age;
}

void add_dmem_use(WorkerSample& sample, const GpuSnapshot& snapshot,
                  const std::vector<DmemRegion>& dmem) {
    for (const DmemRegion& region : dmem) {
        std::string pci(vram_region_card(region.name));
        if (region.bytes == 0 || pci.empty()) continue;
        auto seen = std::find_if(sample.gpu_devices.begin(), sample.gpu_devices.end(),
                                 [&](const WorkerGpuDeviceUse& u) { return u.pci_bus_id == pci; });
        if (seen != sample.gpu_devices.end()) continue;
        auto card = std::find_if(snapshot.devices.begin(), snapshot.devices.end(),
                                 [&](const GpuDevice& d) { return d.pci_bus_id == pci; });
        if (card == snapshot.devices.end()) continue;
        // A worker with nothing on its cards until now had their totals.
        if (sample.gpu_devices.empty()) sample.gpu_device_memory.reset();
        sample.gpu_devices.push_back({pci, region.bytes});
        sample.gpu_memory = sample.gpu_memory.value_or(0) + region.bytes;
        if (card->memory_total)
            sample.gpu_device_memory = sample.gpu_device_memory.value_or(0) + *card->memory_total;
    }
}

void GpuWatch::fill(WorkerSample& sample, std::string_view cgroup,
                    const std::optional<GpuSpec>& spec, Duration max_age,
                    const std::vector<DmemRegion>& dmem) const {
    if (spec) sample.gpu_memory_max = spec->memory_max;
    if (!fresh(max_age)) return;
    WorkerGpuUse use = use_of(*last_, cgroup);
    sample.gpu_memory = use.memory;
    sample.gpu_utilization = use.devices.empty() ? std::optional<double>(0.0) : use.utilization;
    sample.gpu_device_memory = use.memory_total;
    for (const auto& device : use.devices)
        sample.gpu_devices.push_back({device.pci_bus_id, device.memory});
    if (use.devices.empty() && spec) {  // not on its devices yet: theirs
        for (const auto& selector : spec->devices)
            if (const GpuDevice* d = find_gpu(last_->snapshot.devices, selector);
                d && d->memory_total)
                sample.gpu_device_memory = sample.gpu_device_memory.value_or(0) + *d->memory_total;
    }
    add_dmem_use(sample, last_->snapshot, dmem);
}

std::optional<uint64_t> GpuWatch::memory_on(std::string_view cgroup, std::string_view vendor,
                                            Duration max_age) const {
    if (!fresh(max_age)) return std::nullopt;
    uint64_t total = 0;
    for (const auto& device : use_of(*last_, cgroup).devices)
        for (const GpuDevice& d : last_->snapshot.devices)
            if (d.pci_bus_id == device.pci_bus_id && d.vendor == vendor) total += device.memory;
    return total;
}

void GpuWatch::fill(HostSample& sample, Duration max_age) const {
    if (!fresh(max_age)) return;
    const GpuDevice* tightest = tightest_gpu(last_->snapshot);
    if (!tightest) return;
    sample.gpu_memory_total = tightest->memory_total;
    sample.gpu_memory_available = *tightest->memory_total > *tightest->memory_used
                                      ? *tightest->memory_total - *tightest->memory_used
                                      : 0;
    sample.gpu_device = tightest->pci_bus_id;
}

}  // namespace infervisor
