#include "policy/metrics.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "base/units.h"

namespace infervisor {

namespace {

using Value = std::optional<double>;

std::string fixed(double value, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
    return buf;
}

// An engine's number as it is: integers without decimals, others with up to
// six significant digits ("3469", "0.4375", "1.5e+06", "nan", "inf").
std::string plain(double value) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", value);
    return buf;
}

std::string human_bytes(double bytes) {
    static constexpr std::pair<double, const char*> kUnits[] = {
        {1ULL << 40, "T"}, {1ULL << 30, "G"}, {1ULL << 20, "M"}, {1ULL << 10, "K"}};
    for (auto [size, name] : kUnits)
        if (std::fabs(bytes) >= size) return fixed(bytes / size, 1) + name;
    return fixed(bytes, 0);
}

std::string journal_suffix(MetricUnit unit) {
    switch (unit) {
        case MetricUnit::percent:
            return "_PCT";
        case MetricUnit::percent_per_min:
            return "_PCT_PER_MIN";
        case MetricUnit::bytes:
            return "_BYTES";
        case MetricUnit::bytes_per_min:
            return "_BYTES_PER_MIN";
        case MetricUnit::pages_per_second:
            return "_PAGES_PER_SEC";
        case MetricUnit::duration:
            return "_SECONDS";
        case MetricUnit::count:
        case MetricUnit::flag:
        case MetricUnit::number:
            return "";
    }
    return "";
}

MetricInfo info(std::string name, MetricUnit unit) {
    std::string key;
    for (char c : name) key += c == '.' || c == ' ' ? '_' : static_cast<char>(std::toupper(c));
    return MetricInfo{std::move(name), unit, key + journal_suffix(unit)};
}

Value from(std::optional<uint64_t> v) {
    if (!v) return std::nullopt;
    return static_cast<double>(*v);
}

Value percent_of(std::optional<uint64_t> part, std::optional<uint64_t> whole) {
    if (!part || !whole || *whole == 0) return std::nullopt;
    return 100.0 * static_cast<double>(*part) / static_cast<double>(*whole);
}

Value millis(std::optional<Duration> d) {
    if (!d) return std::nullopt;
    return static_cast<double>(d->count());
}

// One PSI field, chosen by line ("some"/"full") and window ("avg10"...).
Value psi_field(const std::optional<PsiReading>& reading, bool full, int window) {
    if (!reading) return std::nullopt;
    const PsiAverages* line = full ? (reading->full ? &*reading->full : nullptr) : &reading->some;
    if (!line) return std::nullopt;
    return window == 10 ? line->avg10 : window == 60 ? line->avg60 : line->avg300;
}

// Adds the 18 PSI metrics for one subject: `prefix` is "" or "host.".
template <class Metric, class Sample>
void add_psi_metrics(std::vector<Metric>& out, const std::string& prefix) {
    using Field = std::optional<PsiReading> Sample::*;
    static constexpr std::pair<const char*, Field> kResources[] = {
        {"memory", &Sample::memory_pressure},
        {"cpu", &Sample::cpu_pressure},
        {"io", &Sample::io_pressure}};
    for (auto [resource, field] : kResources)
        for (bool full : {false, true})
            for (int window : {10, 60, 300}) {
                std::string name = prefix + resource + ".pressure." + (full ? "full" : "some") +
                                   ".avg" + std::to_string(window);
                // Explicit captures: clang 14 cannot capture structured bindings.
                out.push_back({info(name, MetricUnit::percent),
                               [field = field, full, window](const auto& in) {
                                   return psi_field(in.sample.*field, full, window);
                               }});
            }
}

Value event_count(const WorkerInputs& in, uint64_t MemoryEvents::*field) {
    if (!in.events_since_start) return std::nullopt;
    return static_cast<double>((*in.events_since_start).*field);
}

void add_gpu_metrics(std::vector<WorkerMetric>& m) {
    using U = MetricUnit;
    m.push_back({info("gpu.memory", U::bytes),
                 [](const WorkerInputs& in) { return from(in.sample.gpu_memory); }});
    m.push_back({info("gpu.memory", U::percent), [](const WorkerInputs& in) {
                     return percent_of(in.sample.gpu_memory, in.sample.gpu_memory_max);
                 }});
    m.push_back({info("gpu.device_memory", U::percent), [](const WorkerInputs& in) {
                     return percent_of(in.sample.gpu_memory, in.sample.gpu_device_memory);
                 }});
    m.push_back({info("gpu.growth", U::bytes_per_min),
                 [](const WorkerInputs& in) { return in.gpu_growth_bytes_per_min; }});
    m.push_back({info("gpu.growth", U::percent_per_min), [](const WorkerInputs& in) -> Value {
                     if (!in.gpu_growth_bytes_per_min || !in.sample.gpu_memory_max ||
                         *in.sample.gpu_memory_max == 0)
                         return std::nullopt;
                     return 100.0 * *in.gpu_growth_bytes_per_min /
                            static_cast<double>(*in.sample.gpu_memory_max);
                 }});
    m.push_back({info("gpu.utilization", U::percent),
                 [](const WorkerInputs& in) { return in.sample.gpu_utilization; }});
}

std::vector<WorkerMetric> build_worker_metrics() {
    using U = MetricUnit;
    std::vector<WorkerMetric> m;
    add_psi_metrics<WorkerMetric, WorkerSample>(m, "");
    m.push_back({info("memory.current", U::bytes),
                 [](const WorkerInputs& in) { return from(in.sample.memory_current); }});
    m.push_back({info("memory.current", U::percent), [](const WorkerInputs& in) {
                     return percent_of(in.sample.memory_current, in.sample.memory_max);
                 }});
    m.push_back({info("memory.growth", U::percent_per_min), [](const WorkerInputs& in) {
                     return growth_percent(in.sample, in.growth_bytes_per_min);
                 }});
    m.push_back({info("memory.growth", U::bytes_per_min),
                 [](const WorkerInputs& in) { return in.growth_bytes_per_min; }});
    m.push_back({info("memory.headroom", U::duration), [](const WorkerInputs& in) {
                     return millis(memory_headroom(in.sample, in.recent_growth_bytes_per_min));
                 }});
    static constexpr std::pair<const char*, uint64_t MemoryEvents::*> kEvents[] = {
        {"high", &MemoryEvents::high},
        {"max", &MemoryEvents::max},
        {"oom", &MemoryEvents::oom},
        {"oom_kill", &MemoryEvents::oom_kill},
        {"oom_group_kill", &MemoryEvents::oom_group_kill}};
    for (auto [name, field] : kEvents)
        m.push_back({info(std::string("memory.events.") + name, U::count),
                     [field = field](const WorkerInputs& in) { return event_count(in, field); }});
    m.push_back({info("swap.current", U::bytes),
                 [](const WorkerInputs& in) { return from(in.sample.swap_current); }});
    m.push_back({info("swap.current", U::percent), [](const WorkerInputs& in) {
                     return percent_of(in.sample.swap_current, in.sample.swap_max);
                 }});
    m.push_back({info("swap.in", U::pages_per_second),
                 [](const WorkerInputs& in) { return in.swap_in_per_second; }});
    m.push_back({info("swap.out", U::pages_per_second),
                 [](const WorkerInputs& in) { return in.swap_out_per_second; }});
    m.push_back({info("cpu.time", U::duration), [](const WorkerInputs& in) -> Value {
                     if (!in.sample.cpu_usage_usec) return std::nullopt;
                     return static_cast<double>(*in.sample.cpu_usage_usec) / 1000.0;
                 }});
    m.push_back({info("cpu.usage", U::percent),
                 [](const WorkerInputs& in) { return in.cpu_usage_percent; }});
    m.push_back({info("runtime", U::duration), [](const WorkerInputs& in) -> Value {
                     if (!in.sample.started_at) return std::nullopt;
                     return millis(
                         std::chrono::duration_cast<Duration>(in.now - *in.sample.started_at));
                 }});
    m.push_back({info("heartbeat.age", U::duration),
                 [](const WorkerInputs& in) { return millis(heartbeat_age(in.sample, in.now)); }});
    m.push_back({info("heartbeat missed", U::flag), [](const WorkerInputs& in) -> Value {
                     auto age = heartbeat_age(in.sample, in.now);
                     auto interval = in.sample.watchdog_interval;
                     if (!age || !interval || *interval <= Duration::zero()) return std::nullopt;
                     return *age > *interval ? 1.0 : 0.0;
                 }});
    m.push_back({info("workdir.usage", U::bytes),
                 [](const WorkerInputs& in) { return from(in.sample.workdir_usage); }});
    m.push_back({info("workdir.usage", U::percent), [](const WorkerInputs& in) {
                     return percent_of(in.sample.workdir_usage, in.sample.workdir_quota);
                 }});
    add_gpu_metrics(m);
    return m;
}

std::vector<HostMetric> build_host_metrics() {
    using U = MetricUnit;
    std::vector<HostMetric> m;
    add_psi_metrics<HostMetric, HostSample>(m, "host.");
    m.push_back({info("host.swap.in", U::pages_per_second),
                 [](const HostInputs& in) { return in.swap_in_per_second; }});
    m.push_back({info("host.swap.out", U::pages_per_second),
                 [](const HostInputs& in) { return in.swap_out_per_second; }});
    m.push_back({info("host.mem.available", U::bytes),
                 [](const HostInputs& in) { return from(in.sample.mem_available); }});
    m.push_back({info("host.mem.available", U::percent), [](const HostInputs& in) {
                     return percent_of(in.sample.mem_available, in.sample.mem_total);
                 }});
    m.push_back({info("host.mem.headroom", U::duration), [](const HostInputs& in) {
                     return millis(
                         host_mem_headroom(in.sample, in.mem_available_change_per_minute));
                 }});
    m.push_back({info("host.swap.free", U::bytes),
                 [](const HostInputs& in) { return from(in.sample.swap_free); }});
    m.push_back({info("host.swap.free", U::percent),
                 [](const HostInputs& in) { return host_swap_free_percent(in.sample); }});
    m.push_back({info("host.gpu.memory.available", U::bytes),
                 [](const HostInputs& in) { return from(in.sample.gpu_memory_available); }});
    m.push_back({info("host.gpu.memory.available", U::percent), [](const HostInputs& in) {
                     return percent_of(in.sample.gpu_memory_available, in.sample.gpu_memory_total);
                 }});
    return m;
}

template <class Metric>
const Metric* find_in(const std::vector<Metric>& table, std::string_view name, MetricUnit unit) {
    for (const auto& metric : table)
        if (metric.info.name == name && metric.info.unit == unit) return &metric;
    return nullptr;
}

template <class Metric>
std::vector<MetricInfo> infos(const std::vector<Metric>& table) {
    std::vector<MetricInfo> out;
    for (const auto& metric : table) out.push_back(metric.info);
    return out;
}

std::vector<MetricInfo> catalogue(RuleScope scope) {
    return scope == RuleScope::worker ? infos(worker_metrics()) : infos(host_metrics());
}

}  // namespace

std::string engine_journal_key(std::string_view series, bool rate) {
    constexpr size_t kMaxKey = 53;
    const std::string suffix = rate ? "_PER_SEC" : "";
    std::string key = "ENGINE_";
    for (char c : series)
        key += std::isalnum(static_cast<unsigned char>(c))
                   ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
                   : '_';
    if (key.size() + suffix.size() > kMaxKey) key.resize(kMaxKey - suffix.size());
    return key + suffix;
}

std::string describe_unit(MetricUnit unit) {
    switch (unit) {
        case MetricUnit::percent:
            return "a percentage (e.g. 40%)";
        case MetricUnit::percent_per_min:
            return "a percentage per minute (e.g. 15%/min)";
        case MetricUnit::bytes:
            return "a size (e.g. 512M, 2G)";
        case MetricUnit::bytes_per_min:
            return "a size per minute (e.g. 100M/min)";
        case MetricUnit::pages_per_second:
            return "pages per second (e.g. 0, 100/s)";
        case MetricUnit::duration:
            return "a duration (e.g. 90s, 2h)";
        case MetricUnit::count:
            return "a count (e.g. 0, 3)";
        case MetricUnit::flag:
            return "no value";
        case MetricUnit::number:
            return "a plain number (e.g. 0, 2 or 0.9)";
    }
    return "?";
}

std::string format_measurement(MetricUnit unit, double value) {
    switch (unit) {
        case MetricUnit::percent:
            return fixed(value, 2) + "%";
        case MetricUnit::percent_per_min:
            return fixed(value, 2) + "%/min";
        case MetricUnit::bytes:
            return human_bytes(value);
        case MetricUnit::bytes_per_min:
            return human_bytes(value) + "/min";
        case MetricUnit::pages_per_second:
            return fixed(value, 1) + "/s";
        case MetricUnit::duration:
            return format_duration(Duration(std::llround(value)));
        case MetricUnit::count:
            return fixed(value, 0);
        case MetricUnit::flag:
            return value != 0 ? "yes" : "no";
        case MetricUnit::number:
            return plain(value);
    }
    return "?";
}

std::string format_journal_value(MetricUnit unit, double value) {
    switch (unit) {
        case MetricUnit::percent:
        case MetricUnit::percent_per_min:
            return fixed(value, 2);
        case MetricUnit::pages_per_second:
            return fixed(value, 1);
        case MetricUnit::duration:
            return fixed(value / 1000.0, 3);
        case MetricUnit::number:
            return plain(value);
        default:
            return fixed(value, 0);
    }
}

const std::vector<WorkerMetric>& worker_metrics() {
    static const std::vector<WorkerMetric> table = build_worker_metrics();
    return table;
}

const std::vector<HostMetric>& host_metrics() {
    static const std::vector<HostMetric> table = build_host_metrics();
    return table;
}

std::vector<MetricInfo> metrics_named(RuleScope scope, std::string_view name) {
    std::vector<MetricInfo> out;
    for (auto& metric : catalogue(scope))
        if (metric.name == name) out.push_back(metric);
    return out;
}

std::vector<std::string> metric_names(RuleScope scope) {
    std::vector<std::string> out;
    for (auto& metric : catalogue(scope))
        if (std::find(out.begin(), out.end(), metric.name) == out.end()) out.push_back(metric.name);
    return out;
}

const WorkerMetric* find_worker_metric(std::string_view name, MetricUnit unit) {
    return find_in(worker_metrics(), name, unit);
}

const HostMetric* find_host_metric(std::string_view name, MetricUnit unit) {
    return find_in(host_metrics(), name, unit);
}

std::optional<double> growth_percent(const WorkerSample& sample,
                                     std::optional<double> growth_bytes_per_min) {
    if (!growth_bytes_per_min) return std::nullopt;
    std::optional<uint64_t> reference =
        sample.memory_max ? sample.memory_max : sample.memory_current;
    if (!reference || *reference == 0) return std::nullopt;
    return 100.0 * *growth_bytes_per_min / static_cast<double>(*reference);
}

std::optional<Duration> memory_headroom(const WorkerSample& sample,
                                        std::optional<double> growth_bytes_per_min) {
    if (!growth_bytes_per_min || *growth_bytes_per_min <= 0) return std::nullopt;
    if (!sample.memory_max || !sample.memory_current) return std::nullopt;
    if (*sample.memory_current >= *sample.memory_max) return Duration::zero();
    double room = static_cast<double>(*sample.memory_max - *sample.memory_current);
    return Duration(std::llround(room / *growth_bytes_per_min * 60'000.0));
}

std::optional<Duration> host_mem_headroom(const HostSample& sample,
                                          std::optional<double> change_per_minute) {
    if (!sample.mem_available || !change_per_minute || *change_per_minute >= 0) return std::nullopt;
    if (*sample.mem_available == 0) return Duration::zero();
    return Duration(
        std::llround(static_cast<double>(*sample.mem_available) / -*change_per_minute * 60'000.0));
}

std::optional<double> host_swap_free_percent(const HostSample& sample) {
    if (!sample.swap_total || !sample.swap_free) return std::nullopt;
    if (*sample.swap_total == 0) return 0.0;
    return 100.0 * static_cast<double>(*sample.swap_free) / static_cast<double>(*sample.swap_total);
}

std::optional<Duration> heartbeat_age(const WorkerSample& sample, TimePoint now) {
    bool watched = sample.watchdog_interval && *sample.watchdog_interval > Duration::zero();
    if (!watched && !sample.last_heartbeat) return std::nullopt;
    std::optional<TimePoint> since =
        sample.last_heartbeat ? sample.last_heartbeat : sample.started_at;
    if (!since) return std::nullopt;
    return std::chrono::duration_cast<Duration>(now - *since);
}

}  // namespace infervisor
