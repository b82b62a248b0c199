#include "gpu/drm_fdinfo.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <limits>
#include <set>
#include <utility>

#include "base/file_io.h"
#include "base/result.h"
#include "base/unique_fd.h"

namespace infervisor {

namespace {

namespace fs = std::filesystem;

using ClientKey = std::pair<std::string, uint64_t>;  // (drm-pdev, drm-client-id)
using EngineBusy = std::map<std::string, double>;    // engine -> % busy
using Counters = DrmUsageReader::ClientCounters;

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * 1024;

// ---- parsing ----

bool is_space(char c) { return c == ' ' || c == '\t'; }

std::string_view strip(std::string_view s) {
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    while (!s.empty() && (is_space(s.back()) || s.back() == '\n' || s.back() == '\r'))
        s.remove_suffix(1);
    return s;
}

std::optional<uint64_t> parse_uint(std::string_view s) {
    uint64_t value = 0;
    if (s.empty() || s.front() < '0' || s.front() > '9') return std::nullopt;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
    return value;
}

// "N" with an optional unit after whitespace: `units` maps each unit to its
// multiplier; an empty unit is 1.
template <size_t N>
std::optional<uint64_t> parse_with_unit(std::string_view value,
                                        const std::pair<std::string_view, uint64_t> (&units)[N]) {
    value = strip(value);
    size_t gap = value.find_first_of(" \t");
    auto number = parse_uint(value.substr(0, gap));
    if (!number) return std::nullopt;
    std::string_view unit = gap == std::string_view::npos ? "" : strip(value.substr(gap));
    if (unit.empty()) return number;
    for (const auto& [name, multiplier] : units) {
        if (unit != name) continue;
        if (*number > std::numeric_limits<uint64_t>::max() / multiplier) return std::nullopt;
        return *number * multiplier;
    }
    return std::nullopt;
}

std::optional<uint64_t> parse_ns(std::string_view value) {
    static constexpr std::pair<std::string_view, uint64_t> kUnits[] = {{"ns", 1}};
    return parse_with_unit(value, kUnits);
}

uint64_t saturating_add(uint64_t a, uint64_t b) {
    return b > std::numeric_limits<uint64_t>::max() - a ? std::numeric_limits<uint64_t>::max()
                                                        : a + b;
}

// Device memory, not host RAM that the memory cgroup charges (see header).
bool is_device_local_region(std::string_view region) {
    return region.starts_with("vram") || region.starts_with("local");
}

bool is_key_char(char c) { return c > ' ' && c < 0x7f && c != ':'; }

// "key:<ws>value" with a drm- key free of whitespace; nullopt otherwise.
std::optional<std::pair<std::string_view, std::string_view>> split_drm_line(std::string_view line) {
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    std::string_view key = line.substr(0, colon);
    if (!key.starts_with("drm-") || !std::all_of(key.begin(), key.end(), is_key_char))
        return std::nullopt;
    return std::pair{key, strip(line.substr(colon + 1))};
}

// The three ways a region's size is given, in the order they are preferred.
struct RegionSizes {
    std::optional<uint64_t> resident, legacy_memory, total;
    std::optional<uint64_t> best() const {
        return resident ? resident : legacy_memory ? legacy_memory : total;
    }
};

bool take_suffix(std::string_view key, std::string_view prefix, std::string& out) {
    if (!key.starts_with(prefix) || key.size() == prefix.size()) return false;
    out = std::string(key.substr(prefix.size()));
    return true;
}

void parse_engine_key(std::string_view key, std::string_view value, DrmClientInfo& info) {
    std::string name;
    if (take_suffix(key, "drm-engine-capacity-", name)) {
        if (auto n = parse_uint(value); n && *n > 0) info.engine_capacity[name] = *n;
    } else if (take_suffix(key, "drm-engine-", name)) {
        if (auto n = parse_ns(value)) info.engine_ns[name] = *n;
    } else if (take_suffix(key, "drm-total-cycles-", name)) {
        if (auto n = parse_uint(value)) info.total_cycles[name] = *n;
    } else if (take_suffix(key, "drm-cycles-", name)) {
        if (auto n = parse_uint(value)) info.cycles[name] = *n;
    }
}

// drm-resident-/drm-memory-/drm-total-<device-local region>; false when the
// key is not one of these.
bool parse_memory_key(std::string_view key, std::string_view value,
                      std::map<std::string, RegionSizes>& regions) {
    std::string region;
    std::optional<uint64_t> RegionSizes::*field = nullptr;
    if (take_suffix(key, "drm-resident-", region))
        field = &RegionSizes::resident;
    else if (take_suffix(key, "drm-memory-", region))
        field = &RegionSizes::legacy_memory;
    else if (!key.starts_with("drm-total-cycles-") && take_suffix(key, "drm-total-", region))
        field = &RegionSizes::total;
    else
        return false;
    if (!is_device_local_region(region)) return true;
    if (auto bytes = parse_drm_size(value)) regions[region].*field = bytes;
    return true;
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

// "dddd:bb:dd.f" in hexadecimal, as sysfs names a PCI device.
bool is_pci_address(std::string_view s) {
    if (s.size() != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.') return false;
    for (size_t i = 0; i < s.size(); ++i)
        if (i != 4 && i != 7 && i != 10 && !std::isxdigit(static_cast<unsigned char>(s[i])))
            return false;
    return true;
}

// ---- reading ----

// Bounded "what: why" lines.
class ErrorSink {
  public:
    ErrorSink(std::vector<std::string>& out, size_t max) : out_(out), max_(max) {}

    // Adds the line that counts what was left out; the last call.
    void finish() {
        if (dropped_ > 0)
            out_.push_back("drm fdinfo: " + std::to_string(dropped_) + " more errors not listed");
        dropped_ = 0;
    }

    void add(std::string line) {
        if (added_ < max_) {
            out_.push_back(std::move(line));
            ++added_;
        } else {
            ++dropped_;
        }
    }
    void add_errno(const std::string& what, int code) { add(Error{code, what}.message()); }

  private:
    std::vector<std::string>& out_;
    size_t max_;
    size_t added_ = 0;
    size_t dropped_ = 0;
};

bool is_gone(int code) { return code == ENOENT || code == ESRCH; }

// readlinkat() into a string; empty on error (errno kept) or when the text
// does not fit PATH_MAX.
std::string read_link_at(int dir_fd, const char* name) {
    char buffer[PATH_MAX];
    ssize_t n = ::readlinkat(dir_fd, name, buffer, sizeof buffer);
    if (n <= 0 || static_cast<size_t>(n) >= sizeof buffer) return {};
    return std::string(buffer, static_cast<size_t>(n));
}

std::string basename_of(std::string_view link) {
    size_t slash = link.rfind('/');
    return std::string(slash == std::string_view::npos ? link : link.substr(slash + 1));
}

// At most `max` bytes of `name` under `dir_fd`; when the cap is reached the
// part after the last newline is dropped, so no cut line is parsed.
Result<std::string> read_bounded_at(int dir_fd, const std::string& name, size_t max) {
    UniqueFd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd) return errno_error("open " + name);
    std::string text(max, '\0');
    size_t got = 0;
    while (got < max) {
        ssize_t n = ::read(fd.get(), text.data() + got, max - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return errno_error("read " + name);
        if (n == 0) break;
        got += static_cast<size_t>(n);
    }
    text.resize(got);
    if (got == max) text.resize(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
    return text;
}

// "/dev/dri/cardN" or "/dev/dri/renderDN": a link text, only classified.
bool is_dri_node(std::string_view target) {
    for (std::string_view prefix : {"/dev/dri/card", "/dev/dri/renderD"}) {
        if (!target.starts_with(prefix)) continue;
        std::string_view number = target.substr(prefix.size());
        return !number.empty() && parse_uint(number).has_value();
    }
    return false;
}

std::optional<uint64_t> read_sysfs_uint(const fs::path& path) {
    auto text = read_file(path);
    if (!text) return std::nullopt;
    return parse_uint(trim(*text));
}

std::string vendor_of(const std::string& driver) {
    if (driver == "amdgpu") return "amd";
    if (driver == "i915" || driver == "xe") return "intel";
    return driver;
}

void fill_amdgpu_figures(const fs::path& device, GpuDevice& out) {
    out.memory_total = read_sysfs_uint(device / "mem_info_vram_total");
    out.memory_used = read_sysfs_uint(device / "mem_info_vram_used");
    if (auto busy = read_sysfs_uint(device / "gpu_busy_percent"); busy && *busy <= 100)
        out.utilization = static_cast<double>(*busy);
}

// amdgpu's <device>/unique_id (amdgpu_pm.c, "DOC: unique_id": "%016llx";
// GFX9 and newer, absent on older cards, empty when the card has none, EPERM
// while it is in reset or suspended) is the 64-bit value that ROCm's runtime
// prints as the agent's UUID, "GPU-" and 16 lower-case hex digits
// (ROCR-Runtime amd_gpu_agent.cpp, HSA_AMD_AGENT_INFO_UUID, from the KFD
// topology's unique_id): the name ROCR_VISIBLE_DEVICES takes for the card.
void read_amdgpu_uuid(const fs::path& device, GpuDevice& out, ErrorSink& errors) {
    auto text = read_file(device / "unique_id");
    if (!text) {
        if (!is_gone(text.error().code)) {
            out.uuid_unreadable = true;
            errors.add_errno("read " + (device / "unique_id").string(), text.error().code);
        }
        return;
    }
    std::string_view id = trim(*text);
    bool hex = id.size() == 16 && std::all_of(id.begin(), id.end(), [](char c) {
                   return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
               });
    if (hex) out.uuid = "GPU-" + std::string(id);
}

std::optional<unsigned> card_number(std::string_view name) {
    if (!name.starts_with("card")) return std::nullopt;
    auto n = parse_uint(name.substr(4));
    if (!n || *n > std::numeric_limits<unsigned>::max()) return std::nullopt;
    return static_cast<unsigned>(*n);
}

// A card and its driver's name (GpuDevice keeps only the vendor).
struct DrmCard {
    GpuDevice device;
    std::string driver;
};

// One /sys/class/drm/cardN, or nullopt when it is not one this source reads.
std::optional<DrmCard> read_card(const fs::path& card, unsigned index, ErrorSink& errors) {
    errno = 0;
    std::string device_link = read_link_at(AT_FDCWD, (card / "device").c_str());
    if (device_link.empty()) {
        if (errno != 0 && !is_gone(errno))
            errors.add_errno("readlink " + (card / "device").string(), errno);
        return std::nullopt;
    }
    std::string address = basename_of(device_link);
    if (!is_pci_address(address)) return std::nullopt;
    std::string driver = basename_of(read_link_at(AT_FDCWD, (card / "device/driver").c_str()));
    // Compute cards whose fdinfo says what memory a client holds. Not
    // nvidia (NVML covers it), nor a server's BMC display (ast, mgag200), a
    // VM's (virtio_gpu, bochs-drm, qxl) or nouveau: on such a host the
    // source stays closed and costs nothing (services/gpu_watch.h).
    if (driver != "amdgpu" && driver != "i915" && driver != "xe") return std::nullopt;
    GpuDevice out;
    out.index = index;
    out.vendor = vendor_of(driver);
    out.pci_bus_id = lower(address);
    if (driver == "amdgpu") {
        fill_amdgpu_figures(card / "device", out);
        read_amdgpu_uuid(card / "device", out, errors);
    }
    return DrmCard{std::move(out), std::move(driver)};
}

// Per-client busy % since `before`, per engine, capacity divided out.
EngineBusy engine_busy(const DrmClientInfo& now_info, const DrmUsageReader::ClientCounters& before,
                       TimePoint now) {
    EngineBusy busy;
    auto capacity = [&](const std::string& engine) {
        auto it = now_info.engine_capacity.find(engine);
        return static_cast<double>(it == now_info.engine_capacity.end() ? 1 : it->second);
    };
    auto elapsed = std::chrono::duration_cast<std::chrono::nanoseconds>(now - before.at).count();
    for (const auto& [engine, ns] : now_info.engine_ns) {
        auto it = before.engine_ns.find(engine);
        if (it == before.engine_ns.end() || elapsed <= 0) continue;
        uint64_t delta = ns > it->second ? ns - it->second : 0;
        busy[engine] =
            100.0 * static_cast<double>(delta) / static_cast<double>(elapsed) / capacity(engine);
    }
    for (const auto& [engine, cycles] : now_info.cycles) {
        auto c = before.cycles.find(engine);
        auto t = before.total_cycles.find(engine);
        auto total = now_info.total_cycles.find(engine);
        if (c == before.cycles.end() || t == before.total_cycles.end() ||
            total == now_info.total_cycles.end() || total->second <= t->second)
            continue;
        uint64_t delta = cycles > c->second ? cycles - c->second : 0;
        busy[engine] = 100.0 * static_cast<double>(delta) /
                       static_cast<double>(total->second - t->second) / capacity(engine);
    }
    return busy;
}

// Counters kept for the next read: never lower than the previous ones (the
// doc's rule for counters that step back).
std::map<std::string, uint64_t> keep_larger(const std::map<std::string, uint64_t>& now,
                                            const std::map<std::string, uint64_t>& before) {
    std::map<std::string, uint64_t> out = now;
    for (auto& [name, value] : out)
        if (auto it = before.find(name); it != before.end()) value = std::max(value, it->second);
    return out;
}

DrmUsageReader::ClientCounters counters_of(const DrmClientInfo& info, TimePoint now,
                                           const DrmUsageReader::ClientCounters* before) {
    if (!before) return {now, info.engine_ns, info.cycles, info.total_cycles};
    return {now, keep_larger(info.engine_ns, before->engine_ns),
            keep_larger(info.cycles, before->cycles),
            keep_larger(info.total_cycles, before->total_cycles)};
}

// One (pid, device) being summed.
struct ProcessDeviceSum {
    GpuProcessUse use;
    EngineBusy busy;
    bool has_busy = false;
};

class ProcessScan {
  public:
    ProcessScan(const DrmRoots& roots, const DrmReadLimits& limits,
                const std::map<std::string, std::string>& driver_by_pdev, ErrorSink& errors)
        : roots_(roots), limits_(limits), driver_by_pdev_(driver_by_pdev), errors_(errors) {}

    // Calls on_client(info) for each new client that `pid` holds.
    template <class OnClient>
    void scan(pid_t pid, OnClient&& on_client) {
        fs::path pid_path = roots_.procfs / std::to_string(pid);
        UniqueFd pid_dir(::open(pid_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (!pid_dir) {
            if (!is_gone(errno)) errors_.add_errno("open " + pid_path.string(), errno);
            return;
        }
        for (const std::string& fd : dri_fds(pid_dir.get(), pid_path)) {
            auto text = read_bounded_at(pid_dir.get(), "fdinfo/" + fd, limits_.max_fdinfo_bytes);
            if (!text) {
                if (!is_gone(text.error().code))
                    errors_.add(pid_path.string() + "/" + text.error().message());
                continue;
            }
            DrmClientInfo info = parse_drm_fdinfo(*text);
            if (accept(info)) on_client(info);
        }
    }

  private:
    // The names of the fds of PID/fd that are DRM nodes, capped.
    std::vector<std::string> dri_fds(int pid_dir, const fs::path& pid_path) {
        std::vector<std::string> out;
        UniqueFd fd_dir(::openat(pid_dir, "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (!fd_dir) {
            if (!is_gone(errno)) errors_.add_errno("open " + (pid_path / "fd").string(), errno);
            return out;
        }
        DIR* dir = ::fdopendir(fd_dir.get());
        if (!dir) return out;
        fd_dir.release();
        size_t looked_at = 0;
        while (dirent* entry = ::readdir(dir)) {
            if (entry->d_name[0] == '.') continue;
            if (++looked_at > limits_.max_fds_per_pid) {
                errors_.add((pid_path / "fd").string() + ": over " +
                            std::to_string(limits_.max_fds_per_pid) + " fds, the rest not read");
                break;
            }
            if (!is_dri_node(read_link_at(::dirfd(dir), entry->d_name))) continue;
            if (out.size() == limits_.max_drm_fds_per_pid) {
                errors_.add((pid_path / "fd").string() + ": over " +
                            std::to_string(limits_.max_drm_fds_per_pid) +
                            " DRM fds, the rest not read");
                break;
            }
            out.emplace_back(entry->d_name);
        }
        ::closedir(dir);
        return out;
    }

    // A client of a listed device, driven by that device's driver, not seen
    // before in this read.
    bool accept(const DrmClientInfo& info) {
        if (!info.client_id || info.pdev.empty()) return false;
        auto device = driver_by_pdev_.find(info.pdev);
        if (device == driver_by_pdev_.end() || device->second != info.driver) return false;
        return seen_.insert({info.pdev, *info.client_id}).second;
    }

    const DrmRoots& roots_;
    const DrmReadLimits& limits_;
    const std::map<std::string, std::string>& driver_by_pdev_;
    ErrorSink& errors_;
    std::set<ClientKey> seen_;
};

std::optional<double> busiest(const ProcessDeviceSum& sum) {
    if (!sum.has_busy) return std::nullopt;
    double most = 0;
    for (const auto& [engine, pct] : sum.busy) most = std::max(most, pct);
    return std::min(most, 100.0);
}

std::vector<DrmCard> list_cards(const DrmRoots& roots, ErrorSink& errors) {
    std::vector<DrmCard> out;
    fs::path class_drm = roots.sysfs / "class/drm";
    DIR* dir = ::opendir(class_drm.c_str());
    if (!dir) {
        if (!is_gone(errno)) errors.add_errno("open " + class_drm.string(), errno);
        return out;
    }
    while (dirent* entry = ::readdir(dir))
        if (auto index = card_number(entry->d_name))
            if (auto card = read_card(class_drm / entry->d_name, *index, errors))
                out.push_back(std::move(*card));
    ::closedir(dir);
    std::sort(out.begin(), out.end(),
              [](const DrmCard& a, const DrmCard& b) { return a.device.index < b.device.index; });
    return out;
}

// The given processes' use of the listed devices, into `snapshot`; each
// client's counters into `current` for the next read.
void read_processes(const DrmRoots& roots, const DrmReadLimits& limits,
                    const std::vector<pid_t>& pids, TimePoint now,
                    const std::map<std::string, std::string>& drivers,
                    const std::map<ClientKey, Counters>& previous, ErrorSink& errors,
                    GpuSnapshot& snapshot, std::map<ClientKey, Counters>& current) {
    ProcessScan scan(roots, limits, drivers, errors);
    for (pid_t pid : pids) {
        std::map<std::string, ProcessDeviceSum> sums;  // by pdev
        scan.scan(pid, [&](const DrmClientInfo& info) {
            ClientKey key{info.pdev, *info.client_id};
            ProcessDeviceSum& sum = sums[info.pdev];
            sum.use.memory = saturating_add(sum.use.memory, info.device_memory);
            auto before = previous.find(key);
            const Counters* prior = before == previous.end() ? nullptr : &before->second;
            if (prior) {
                for (const auto& [engine, pct] : engine_busy(info, *prior, now)) {
                    sum.busy[engine] += pct;
                    sum.has_busy = true;
                }
            }
            current[key] = counters_of(info, now, prior);
        });
        for (auto& [pdev, sum] : sums) {
            sum.use.pid = pid;
            sum.use.pci_bus_id = pdev;
            sum.use.utilization = busiest(sum);
            snapshot.processes.push_back(std::move(sum.use));
        }
    }
}

}  // namespace

std::optional<uint64_t> parse_drm_size(std::string_view value) {
    static constexpr std::pair<std::string_view, uint64_t> kUnits[] = {{"KiB", kKiB},
                                                                       {"MiB", kMiB}};
    return parse_with_unit(value, kUnits);
}

DrmClientInfo parse_drm_fdinfo(std::string_view text) {
    DrmClientInfo info;
    std::map<std::string, RegionSizes> regions;
    while (!text.empty()) {
        size_t newline = text.find('\n');
        std::string_view line = text.substr(0, newline);
        text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
        auto pair = split_drm_line(line);
        if (!pair) continue;
        auto [key, value] = *pair;
        if (key == "drm-driver")
            info.driver = std::string(value);
        else if (key == "drm-pdev")
            info.pdev = is_pci_address(value) ? lower(value) : std::string();
        else if (key == "drm-client-id")
            info.client_id = parse_uint(value);
        else if (!parse_memory_key(key, value, regions))
            parse_engine_key(key, value, info);
    }
    for (const auto& [region, sizes] : regions)
        info.device_memory = saturating_add(info.device_memory, sizes.best().value_or(0));
    return info;
}

std::vector<GpuDevice> list_drm_devices(const DrmRoots& roots, std::vector<std::string>& errors) {
    ErrorSink sink(errors, DrmReadLimits{}.max_errors);
    std::vector<GpuDevice> out;
    for (DrmCard& card : list_cards(roots, sink)) out.push_back(std::move(card.device));
    sink.finish();
    return out;
}

bool has_drm_gpus(const DrmRoots& roots) {
    std::vector<std::string> errors;
    return !list_drm_devices(roots, errors).empty();
}

GpuSnapshot DrmUsageReader::read(const std::vector<pid_t>& pids, TimePoint now) {
    GpuSnapshot snapshot;
    ErrorSink errors(snapshot.errors, limits_.max_errors);
    std::map<std::string, std::string> drivers;  // by PCI address
    for (DrmCard& card : list_cards(roots_, errors)) {
        drivers[card.device.pci_bus_id] = card.driver;
        snapshot.devices.push_back(std::move(card.device));
    }
    std::map<ClientKey, ClientCounters> current;
    if (!snapshot.devices.empty())
        read_processes(roots_, limits_, pids, now, drivers, previous_, errors, snapshot, current);
    previous_ = std::move(current);
    errors.finish();
    return snapshot;
}

GpuSnapshot read_drm_usage(const DrmRoots& roots, const std::vector<pid_t>& pids,
                           const DrmReadLimits& limits) {
    DrmUsageReader reader(roots, limits);
    return reader.read(pids, TimePoint{});
}

}  // namespace infervisor
