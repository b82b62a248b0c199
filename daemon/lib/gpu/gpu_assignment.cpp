#include "gpu/gpu_assignment.h"

#include <algorithm>
#include <cctype>
#include <cerrno>

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

}  // namespace

const std::vector<std::string>& gpu_environment_names() {
    static const std::vector<std::string> names = {"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER"};
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
    std::string cuda;
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
        if (std::any_of(out.devices.begin(), out.devices.end(),
                        [&](const GpuDevice& d) { return d.pci_bus_id == device->pci_bus_id; }))
            return plain_error("gpu.devices names " + describe(*device) + " twice");
        if (device->vendor == "nvidia") cuda += (cuda.empty() ? "" : ",") + device->uuid;
        out.devices.push_back(*device);
    }
    if (!cuda.empty()) {
        out.environment["CUDA_VISIBLE_DEVICES"] = cuda;
        out.environment["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID";
    }
    return out;
}

}  // namespace infervisor
