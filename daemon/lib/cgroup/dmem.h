// Dmem: the kernel's device-memory cgroup controller (Linux 6.14+, "DMEM" in
// Documentation/admin-guide/cgroup-v2.rst), which caps the GPU memory (VRAM)
// the processes of a cgroup may allocate, as memory.max caps host RAM.
//
// The kernel's interface, per region (one region per line, "<region> <value>"):
// - dmem.capacity, in the root cgroup only: every region a driver registered
//   and its size in bytes. A DRM driver names a region "drm/<pci>/<name>"
//   ("drm/0000:03:00.0/vram0" for xe, "drm/0000:03:00.0/vram" for amdgpu).
//   NVIDIA's proprietary driver registers none.
// - dmem.max (and .low, .min) in every other cgroup: "<bytes>" or "max".
//   One region per write here.
// - dmem.current: "<bytes>" charged to the cgroup's subtree.
//
// Contract of cap_device_memory(): a worker's gpu.memory_max becomes dmem.max
// of its cgroup for the VRAM regions ("vram*": device-local memory; other
// regions are host memory that memory.max already charges) of the cards it
// is given (gpu.devices, by PCI address), or of every card when it names
// none (it may then use any of them). The kernel caps each region on its
// own and cannot sum across regions, while gpu.memory_max is the worker's
// total: each region gets the whole of it, the strictest cap that never
// refuses an allocation the total allows on a single card. A worker on two
// cards may therefore hold up to twice memory_max; the gpu.memory rules
// still measure the total. Nothing is written when the controller is absent
// from the worker's cgroup (no dmem.max there: an older kernel, or dmem not
// delegated) or when no region matches (NVIDIA only): the outcome says which,
// for the caller's log. Any other failure (dmem.capacity unreadable while
// the controller is there, a write refused) is an error that names the
// region and the file.
//
// dmem.current is not the first source of the per-worker GPU memory figure: DRM
// fdinfo (gpu/drm_fdinfo.h) gives it per process and per card for every
// amdgpu, i915 and xe card, whether or not dmem is delegated, and the rules,
// the restart room and the metrics need it per card beside each card's own
// total, which one reading of fdinfo and sysfs gives together. dmem.current
// counts the same buffers (both charge at allocation, in VRAM), but exists
// only where the controller is delegated and the driver registers regions
// (not every one does); mixing the two sources would make a worker's figure
// jump as the controller comes and goes. read_dmem_current() fills in, card
// by card, what fdinfo does not show (a driver without fdinfo memory stats,
// a process whose fdinfo could not be read): services/gpu_watch.h
// add_dmem_use().
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "cgroup/cgroup_dir.h"

namespace infervisor {

struct DmemRegion {
    std::string name;  // "drm/0000:03:00.0/vram0"
    uint64_t bytes = 0;

    bool operator==(const DmemRegion&) const = default;
};

// "<region> <bytes>" lines (dmem.capacity, dmem.current); a line that is not
// a region and a number is skipped.
std::vector<DmemRegion> parse_dmem_regions(std::string_view text);

// The card of a VRAM region: "0000:03:00.0" of "drm/0000:03:00.0/vram0";
// empty for any other region (gtt, a name that is not drm's).
std::string_view vram_region_card(std::string_view region);

// The VRAM regions ("drm/<pci>/vram*") of the cards whose PCI addresses
// (lower case, "0000:03:00.0") are `pci_bus_ids`; of every card when empty.
// In the order of `regions`.
std::vector<std::string> vram_regions(const std::vector<DmemRegion>& regions,
                                      const std::vector<std::string>& pci_bus_ids);

struct DmemCap {
    enum class Outcome {
        capped,             // dmem.max written for `regions`
        controller_absent,  // no dmem.max in the worker's cgroup
        no_regions,         // no VRAM region of those cards (NVIDIA only)
    };
    Outcome outcome = Outcome::controller_absent;
    std::vector<std::string> regions;
};

// Writes "<region> <max_bytes>" to dmem.max of `worker` for each VRAM region
// of those cards listed in `capacity_file` (the root cgroup's dmem.capacity).
Result<DmemCap> cap_device_memory(const CgroupDir& worker,
                                  const std::filesystem::path& capacity_file,
                                  const std::vector<std::string>& pci_bus_ids, uint64_t max_bytes);

// dmem.current of `dir`, region by region; an error when unreadable (also
// when the controller is absent).
Result<std::vector<DmemRegion>> read_dmem_current(const CgroupDir& dir);

}  // namespace infervisor
