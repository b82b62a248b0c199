#include "gpu/gpu_device_groups.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <system_error>

namespace infervisor {

namespace fs = std::filesystem;

namespace {

// A card has one render node; more entries than this is not a DRM sysfs dir.
constexpr int kMaxDrmEntries = 64;

std::string card_text(const GpuDevice& d) {
    return "card" + std::to_string(d.index) + " (" + d.vendor + ", " + d.pci_bus_id + ")";
}

// The "renderD<M>" entry of <sysfs>/class/drm/cardN/device/drm; empty: none.
Result<std::string> render_node_of(const GpuDevice& d, const fs::path& sysfs) {
    fs::path dir = sysfs / "class/drm" / ("card" + std::to_string(d.index)) / "device/drm";
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    if (ec == std::errc::no_such_file_or_directory) return std::string();
    if (ec) return Error{ec.value(), "list " + dir.string()};
    int seen = 0;
    for (; it != fs::directory_iterator() && seen < kMaxDrmEntries; it.increment(ec), ++seen) {
        std::string name = it->path().filename().string();
        if (name.size() > 7 && name.starts_with("renderD") &&
            std::all_of(name.begin() + 7, name.end(), [](char c) { return c >= '0' && c <= '9'; }))
            return name;
    }
    if (ec) return Error{ec.value(), "list " + dir.string()};
    return std::string();
}

// The group of `node`, appended to `out` once; nothing when it does not exist.
Result<void> add_group_of(const fs::path& node, const GpuDevice& d, std::vector<gid_t>& out) {
    struct stat st {};
    if (::lstat(node.c_str(), &st) != 0) {
        if (errno == ENOENT) return {};
        return errno_error("lstat " + node.string() + " (the device node of " + card_text(d) + ")");
    }
    if (!S_ISCHR(st.st_mode))
        return plain_error(node.string() + " (the device node of " + card_text(d) +
                           ") is not a character device: its group is not given to the worker");
    // Read and write for everyone (mode 0666, as some hosts set them): no
    // group is needed.
    if ((st.st_mode & (S_IROTH | S_IWOTH)) == (S_IROTH | S_IWOTH)) return {};
    if (st.st_gid == 0)
        return plain_error(node.string() + " (the device node of " + card_text(d) +
                           ") belongs to group root (gid 0), which is never given to a worker; "
                           "give the node a group of its own (udev: GROUP=\"render\")");
    if (std::find(out.begin(), out.end(), st.st_gid) == out.end()) out.push_back(st.st_gid);
    return {};
}

}  // namespace

Result<std::vector<gid_t>> gpu_device_groups(const std::vector<GpuDevice>& devices,
                                             const fs::path& sysfs, const fs::path& devfs) {
    std::vector<gid_t> out;
    for (const auto& d : devices) {
        if (d.vendor != "amd" && d.vendor != "intel") continue;
        auto render = render_node_of(d, sysfs);
        if (!render) return render.error();
        if (!render->empty())
            if (auto r = add_group_of(devfs / "dri" / *render, d, out); !r) return r.error();
        if (d.vendor == "amd")
            if (auto r = add_group_of(devfs / "kfd", d, out); !r) return r.error();
    }
    return out;
}

}  // namespace infervisor
