#include "gpu/gpu_spec.h"

#include <algorithm>
#include <cctype>

namespace infervisor {

namespace {

bool all_of(std::string_view text, int (*is)(int)) {
    return !text.empty() && std::all_of(text.begin(), text.end(), [is](char c) {
        return is(static_cast<unsigned char>(c)) != 0;
    });
}

// "0000:03:00.0": 4 hex digits, 2, 2, then one digit 0-7.
bool is_pci_bus_id(std::string_view text) {
    if (text.size() != 12 || text[4] != ':' || text[7] != ':' || text[10] != '.') return false;
    return all_of(text.substr(0, 4), isxdigit) && all_of(text.substr(5, 2), isxdigit) &&
           all_of(text.substr(8, 2), isxdigit) && text[11] >= '0' && text[11] <= '7';
}

// "GPU-" or "MIG-" then hex digits and dashes, as nvidia-smi -L prints them.
bool is_uuid(std::string_view text) {
    if (text.size() < 8 || text.size() > 96) return false;
    // MIG-... (a MIG instance) is not one: the devices read are whole GPUs.
    if (!text.starts_with("GPU-")) return false;
    std::string_view rest = text.substr(4);
    return std::all_of(rest.begin(), rest.end(), [](char c) {
        return std::isxdigit(static_cast<unsigned char>(c)) || c == '-' || c == '/';
    });
}

}  // namespace

std::optional<GpuSelectorKind> gpu_selector_kind(std::string_view text) {
    // "0" to "999", as NVML numbers them: "01" would never match one.
    if (text.size() <= 3 && all_of(text, isdigit) && (text.size() == 1 || text[0] != '0'))
        return GpuSelectorKind::index;
    if (is_uuid(text)) return GpuSelectorKind::uuid;
    if (is_pci_bus_id(text)) return GpuSelectorKind::pci_bus_id;
    return std::nullopt;
}

}  // namespace infervisor
