#include "services/caps_fit.h"

#include "base/units.h"

namespace infervisor {

namespace {

// `host.mem_total` is known.
std::optional<std::string> caps_overcommit(const Config& config, const MemInfo& host) {
    uint64_t caps = 0;
    size_t capped = 0;
    for (const auto& w : config.workers)
        if (w.memory.max) {
            caps += *w.memory.max;
            ++capped;
        }
    const uint64_t room = *host.mem_total + host.swap_total.value_or(0);
    if (caps <= room) return std::nullopt;
    return "the memory.max of " + std::to_string(capped) + " worker(s) add up to " +
           human_size(caps) + ", " + human_size(caps - room) +
           " more than this host's RAM + swap (" + human_size(room) +
           "): a worker growing toward its cap can exhaust the host before it reaches it, so "
           "only host_rules act before the kernel's OOM killer; lower the caps or keep host "
           "rules on host.mem.available";
}

}  // namespace

std::vector<std::string> host_fit_warnings(const Config& config, const MemInfo& host) {
    std::vector<std::string> warnings;
    if (!host.mem_total) return warnings;
    if (auto caps = caps_overcommit(config, host)) warnings.push_back(*caps);
    for (const auto& w : config.workers)
        if (w.memory.reserve && *w.memory.reserve > *host.mem_total && !w.overcommit)
            warnings.push_back("worker '" + w.name + "': memory.reserve " +
                               human_size(*w.memory.reserve) + " can never fit on this host (RAM " +
                               human_size(*host.mem_total) +
                               "): it would wait for room forever; lower it, or set "
                               "admission: overcommit");
    return warnings;
}

std::vector<std::string> host_fit_warnings(const Config& config,
                                           const std::filesystem::path& procfs) {
    auto host = read_meminfo(procfs);
    if (!host) return {};
    return host_fit_warnings(config, *host);
}

}  // namespace infervisor
