#include "services/caps_fit.h"

#include "base/file_io.h"
#include "policy/metrics.h"

namespace infervisor {

namespace {
std::string size(uint64_t bytes) {
    return format_measurement(MetricUnit::bytes, static_cast<double>(bytes));
}
}  // namespace

std::optional<std::string> caps_overcommit_warning(const Config& config, const MemInfo& host) {
    if (!host.mem_total) return std::nullopt;
    uint64_t caps = 0;
    size_t capped = 0;
    for (const auto& w : config.workers)
        if (w.memory.max) {
            caps += *w.memory.max;
            ++capped;
        }
    const uint64_t room = *host.mem_total + host.swap_total.value_or(0);
    if (caps <= room) return std::nullopt;
    return "the memory.max of " + std::to_string(capped) + " worker(s) add up to " + size(caps) +
           ", " + size(caps - room) + " more than this host's RAM + swap (" + size(room) +
           "): a worker growing toward its cap can exhaust the host before it reaches it, so "
           "only host_rules act before the kernel's OOM killer; lower the caps or keep host "
           "rules on host.mem.available";
}

std::optional<std::string> caps_overcommit_warning(const Config& config,
                                                   const std::filesystem::path& procfs) {
    auto host = read_meminfo(procfs);
    if (!host) return std::nullopt;
    return caps_overcommit_warning(config, *host);
}

}  // namespace infervisor
