#include "policy/victim.h"

#include <cstdio>
#include <limits>
#include <tuple>

namespace infervisor {

namespace {

bool runaway(const VictimView& v) {
    return v.growth_bytes_per_min && *v.growth_bytes_per_min >= kRunawayGrowthBytesPerMin;
}

// Larger key = better victim.
auto victim_key(const VictimView& v) {
    constexpr double kUnknownGrowth = -std::numeric_limits<double>::infinity();
    double growth = runaway(v) ? *v.growth_bytes_per_min : 0.0;
    auto size = victim_size(v);
    return std::make_tuple(-static_cast<long long>(v.priority), growth,
                           size ? static_cast<long double>(*size) : -1.0L,
                           v.growth_percent_per_min.value_or(kUnknownGrowth));
}

std::string mib(double bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", bytes / (1024.0 * 1024.0));
    return buf;
}

// "+19.8 MiB/s 412 MiB" (growth per second, size), "growth unknown 412 MiB".
std::string figures(const VictimView& v) {
    std::string out = v.growth_bytes_per_min ? (*v.growth_bytes_per_min < 0 ? "" : "+") +
                                                   mib(*v.growth_bytes_per_min / 60.0) + " MiB/s"
                                             : std::string("growth unknown");
    auto size = victim_size(v);
    out += size ? " " + mib(static_cast<double>(*size)) + " MiB" : std::string(" size unknown");
    return out;
}

}  // namespace

std::optional<uint64_t> victim_size(const VictimView& view) {
    return view.memory_anon ? view.memory_anon : view.memory_current;
}

std::optional<size_t> pick_victim(const std::vector<VictimView>& workers) {
    std::optional<size_t> best;
    for (size_t i = 0; i < workers.size(); ++i) {
        const VictimView& w = workers[i];
        if (w.is_protected) continue;
        if (!best) {
            best = i;
            continue;
        }
        auto mine = victim_key(w), theirs = victim_key(workers[*best]);
        if (mine > theirs || (mine == theirs && w.name < workers[*best].name)) best = i;
    }
    return best;
}

std::string explain_victim(const std::vector<VictimView>& workers, size_t chosen) {
    const VictimView& v = workers.at(chosen);
    bool lower_priority = false, any_other = false;
    for (size_t i = 0; i < workers.size(); ++i) {
        if (i == chosen || workers[i].is_protected) continue;
        any_other = true;
        if (workers[i].priority > v.priority) lower_priority = true;
    }
    auto size = victim_size(v);
    std::string what = !v.gpu_device.empty() ? "GPU memory on " + v.gpu_device
                       : v.memory_anon       ? "anon"
                                             : "memory";
    std::string size_text =
        size ? what + " " + mib(static_cast<double>(*size)) + " MiB" : std::string("size unknown");
    std::string out;
    if (runaway(v))
        out = "growing " + mib(*v.growth_bytes_per_min / 60.0) + " MiB/s (" + size_text + ")";
    else if (!any_other)
        out = "the only candidate (" + size_text + ")";
    else
        out = "largest, none growing (" + size_text + ")";
    if (lower_priority) out = "lowest priority (" + std::to_string(v.priority) + "), " + out;
    std::string others;
    for (size_t i = 0; i < workers.size(); ++i) {
        if (i == chosen) continue;
        const VictimView& o = workers[i];
        std::string entry = o.name + " ";
        if (o.is_protected)
            entry += "protected";
        else
            entry += figures(o);
        if (o.priority != v.priority) entry += " priority " + std::to_string(o.priority);
        others += (others.empty() ? "" : ", ") + entry;
    }
    if (!others.empty()) out += "; others: " + others;
    return out;
}

}  // namespace infervisor
