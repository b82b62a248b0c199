#include "gpu/gpu_assignment.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdlib>

namespace infervisor {

namespace {

std::string lower(std::string text) {
    for (auto& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
}

std::string describe(const GpuDevice& d) {
    std::string text = std::to_string(d.index) + " " + (d.name.empty() ? d.vendor : d.name);
    std::string ids = d.uuid;
    if (!d.pci_bus_id.empty()) ids += (ids.empty() ? "" : ", ") + d.pci_bus_id;
    return ids.empty() ? text : text + " (" + ids + ")";
}

// "dddd:bb:dd.f" as numbers, for PCI order: a domain may have more than four
// hex digits (VMD domains are 10000 and up), so text order would not do.
std::array<unsigned long, 4> pci_order_key(const std::string& address) {
    std::array<unsigned long, 4> key{};
    size_t at = 0;
    for (auto& part : key) {
        size_t end = address.find_first_of(":.", at);
        part = std::strtoul(address.substr(at, end - at).c_str(), nullptr, 16);
        if (end == std::string::npos) break;
        at = end + 1;
    }
    return key;
}

// The card's index among the host's Intel cards in PCI order: Level Zero's
// device order under ZE_ENABLE_PCI_ID_DEVICE_ORDER=1 (compute-runtime,
// ExecutionEnvironment::sortNeoDevices(): by domain, bus, device, function).
unsigned level_zero_index(const GpuDevice& card, const std::vector<GpuDevice>& host) {
    auto key = pci_order_key(card.pci_bus_id);
    return static_cast<unsigned>(std::count_if(host.begin(), host.end(), [&](const GpuDevice& d) {
        return d.vendor == "intel" && pci_order_key(d.pci_bus_id) < key;
    }));
}

}  // namespace

const std::vector<std::string>& gpu_environment_names() {
    static const std::vector<std::string> names = {"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",
                                                   "ROCR_VISIBLE_DEVICES", "ZE_AFFINITY_MASK",
                                                   "ZE_ENABLE_PCI_ID_DEVICE_ORDER"};
    return names;
}

const GpuDevice* find_gpu(const std::vector<GpuDevice>& host, const std::string& selector) {
    auto kind = gpu_selector_kind(selector);
    if (!kind) return nullptr;
    auto matches = [&](const GpuDevice& d) {
        switch (*kind) {
            case GpuSelectorKind::index:
                return d.vendor == "nvidia" && std::to_string(d.index) == selector;
            case GpuSelectorKind::uuid:
                return !d.uuid.empty() && d.uuid == selector;
            case GpuSelectorKind::pci_bus_id:
                return d.pci_bus_id == lower(selector);
        }
        return false;
    };
    // A card that answers before one gone from its driver that had the same
    // index (the driver renumbers the others).
    auto it = std::find_if(host.begin(), host.end(),
                           [&](const GpuDevice& d) { return d.fault.empty() && matches(d); });
    if (it == host.end()) it = std::find_if(host.begin(), host.end(), matches);
    return it == host.end() ? nullptr : &*it;
}

std::string describe_gpus(const std::vector<GpuDevice>& host) {
    if (host.empty()) return "none";
    std::string text;
    for (const auto& d : host) text += (text.empty() ? "" : "; ") + describe(d);
    return text;
}

Result<GpuAssignment> assign_gpus(const GpuSpec& spec, const std::vector<GpuDevice>& host) {
    GpuAssignment out;
    std::string cuda, rocr, level_zero;
    auto append = [](std::string& list, const std::string& item) {
        list += (list.empty() ? "" : ",") + item;
    };
    for (const auto& selector : spec.devices) {
        const GpuDevice* device = find_gpu(host, selector);
        if (!device)
            return plain_error("gpu device '" + selector +
                               "' does not exist on this host (its GPUs: " + describe_gpus(host) +
                               ")");
        if (!device->fault.empty())
            return Error{EWOULDBLOCK, "gpu device '" + selector + "' (" + describe(*device) +
                                          ") is in error: " + device->fault};
        // Without its UUID CUDA could not be told this card, and without
        // CUDA_VISIBLE_DEVICES a worker would see every card: it waits.
        if (device->vendor == "nvidia" && device->uuid.empty())
            return Error{EWOULDBLOCK, "gpu device '" + selector + "' (" + describe(*device) +
                                          "): its UUID could not be read"};
        // The same for an AMD card whose unique_id the driver refuses now (a
        // reset); one that has none (GFX8 and older, some SR-IOV functions)
        // never will: ROCm could be told it only by an index in its own
        // enumeration, which is not DRM's card number, so it is refused.
        if (device->vendor == "amd" && device->uuid.empty() && device->uuid_unreadable)
            return Error{EWOULDBLOCK, "gpu device '" + selector + "' (" + describe(*device) +
                                          "): its unique_id could not be read"};
        if (device->vendor == "amd" && device->uuid.empty())
            return plain_error("gpu device '" + selector + "' (" + describe(*device) +
                               "): amdgpu gives no unique_id for it (GFX8 and older cards, "
                               "some virtual functions), and without one ROCR_VISIBLE_DEVICES "
                               "cannot name it");
        if (device->vendor != "nvidia" && device->vendor != "amd" && device->vendor != "intel")
            return plain_error("gpu device '" + selector + "' (" + describe(*device) +
                               "): no variable names a " + device->vendor + " device");
        if (std::any_of(out.devices.begin(), out.devices.end(),
                        [&](const GpuDevice& d) { return d.pci_bus_id == device->pci_bus_id; }))
            return plain_error("gpu.devices names " + describe(*device) + " twice");
        if (device->vendor == "nvidia") append(cuda, device->uuid);
        if (device->vendor == "amd") append(rocr, device->uuid);
        if (device->vendor == "intel")
            append(level_zero, std::to_string(level_zero_index(*device, host)));
        out.devices.push_back(*device);
    }
    if (!cuda.empty()) {
        out.environment["CUDA_VISIBLE_DEVICES"] = cuda;
        out.environment["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID";
    }
    if (!rocr.empty()) out.environment["ROCR_VISIBLE_DEVICES"] = rocr;
    if (!level_zero.empty()) {
        out.environment["ZE_AFFINITY_MASK"] = level_zero;
        out.environment["ZE_ENABLE_PCI_ID_DEVICE_ORDER"] = "1";
    }
    return out;
}

}  // namespace infervisor
