#include "gpu/gpu_config.h"

#include <algorithm>

namespace infervisor {

namespace {

void parse_devices(YamlMap& map, GpuSpec& spec, ConfigErrors& errors) {
    std::vector<std::string> devices;
    if (!map.get_string_list("devices", devices, Required::no, kMaxGpuDevices)) return;
    std::vector<std::string> seen;
    for (const auto& device : devices) {
        if (!gpu_selector_kind(device)) {
            errors.add(map.node()["devices"].Mark(),
                       "'gpu.devices': '" + device.substr(0, 100) +
                           "' is no GPU: give an index (0), a UUID (GPU-...) or a PCI "
                           "address (0000:03:00.0)");
            return;
        }
        if (std::find(seen.begin(), seen.end(), device) != seen.end()) {
            errors.add(map.node()["devices"].Mark(), "'gpu.devices' names '" + device + "' twice");
            return;
        }
        seen.push_back(device);
    }
    spec.devices = std::move(devices);
}

}  // namespace

void parse_gpu_keys(YamlMap& worker, std::optional<GpuSpec>& spec, ConfigErrors& errors) {
    auto node = worker.take("gpu");
    if (!node) return;
    if (node->IsScalar() && node->Scalar() == "none") {  // drops one inherited from defaults
        spec.reset();
        return;
    }
    GpuSpec merged = spec.value_or(GpuSpec{});
    YamlMap map(*node, errors, "'gpu'");
    if (!map.valid()) return;
    parse_devices(map, merged, errors);
    map.get_size("memory_max", merged.memory_max);
    map.finish();
    spec = std::move(merged);
}

}  // namespace infervisor
