#include "cgroup/dmem.h"

#include <algorithm>
#include <charconv>
#include <system_error>

#include "base/file_io.h"

namespace infervisor {

namespace {

// Bounds what a region line may hold: far more regions than a host has cards.
constexpr size_t kMaxRegions = 1024;

// "0000:03:00.0" of "drm/0000:03:00.0/vram0"; empty when not a DRM region.
std::string_view region_card(std::string_view region) {
    if (!region.starts_with("drm/")) return {};
    region.remove_prefix(4);
    auto slash = region.find('/');
    if (slash == std::string_view::npos) return {};
    return region.substr(0, slash);
}

std::string_view region_memory(std::string_view region) {
    auto slash = region.rfind('/');
    return slash == std::string_view::npos ? std::string_view{} : region.substr(slash + 1);
}

}  // namespace

std::string_view vram_region_card(std::string_view region) {
    std::string_view card = region_card(region);
    return region_memory(region).starts_with("vram") ? card : std::string_view{};
}

std::vector<DmemRegion> parse_dmem_regions(std::string_view text) {
    std::vector<DmemRegion> out;
    while (!text.empty() && out.size() < kMaxRegions) {
        auto nl = text.find('\n');
        std::string_view line = trim(text.substr(0, nl));
        text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
        auto space = line.find_first_of(" \t");
        if (space == std::string_view::npos || space == 0) continue;
        std::string_view name = line.substr(0, space);
        std::string_view value = trim(line.substr(space));
        uint64_t bytes = 0;
        auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), bytes);
        if (ec != std::errc{} || end != value.data() + value.size()) continue;
        out.push_back({std::string(name), bytes});
    }
    return out;
}

std::vector<std::string> vram_regions(const std::vector<DmemRegion>& regions,
                                      const std::vector<std::string>& pci_bus_ids) {
    std::vector<std::string> out;
    for (const auto& r : regions) {
        std::string_view card = vram_region_card(r.name);
        if (card.empty()) continue;
        if (!pci_bus_ids.empty() &&
            std::find(pci_bus_ids.begin(), pci_bus_ids.end(), card) == pci_bus_ids.end())
            continue;
        out.push_back(r.name);
    }
    return out;
}

Result<DmemCap> cap_device_memory(const CgroupDir& worker,
                                  const std::filesystem::path& capacity_file,
                                  const std::vector<std::string>& pci_bus_ids, uint64_t max_bytes) {
    DmemCap cap;
    std::error_code ec;
    if (!std::filesystem::exists(worker.path() / "dmem.max", ec)) return cap;
    auto capacity = read_file(capacity_file);
    if (!capacity)
        return plain_error("the dmem controller is enabled for " + worker.path().string() +
                           " but its regions cannot be read: " + capacity.error().message());
    cap.regions = vram_regions(parse_dmem_regions(*capacity), pci_bus_ids);
    if (cap.regions.empty()) {
        cap.outcome = DmemCap::Outcome::no_regions;
        return cap;
    }
    for (const auto& region : cap.regions) {
        auto r = worker.write("dmem.max", region + " " + std::to_string(max_bytes));
        if (!r)
            return plain_error("cannot cap GPU memory region " + region + " at " +
                               std::to_string(max_bytes) + " bytes in " +
                               (worker.path() / "dmem.max").string() + ": " + r.error().message());
    }
    cap.outcome = DmemCap::Outcome::capped;
    return cap;
}

Result<std::vector<DmemRegion>> read_dmem_current(const CgroupDir& dir) {
    auto text = dir.read("dmem.current");
    if (!text) return text.error();
    return parse_dmem_regions(*text);
}

}  // namespace infervisor
