// The metric catalogue: every name a rule's `when` may use, its unit, and how
// it is measured from a sample (plus the rates the engine derives over time).
//
// Worker metrics (rules:)                      unit
//   {memory,cpu,io}.pressure.{some,full}.{avg10,avg60,avg300}   %
//   memory.current          bytes, or % of memory.max
//   memory.growth           %/min of memory.max (of memory.current when there
//                           is no max), or bytes/min (e.g. 100M/min); over the
//                           engine's growth window (GrowthTracker), from the
//                           serving baseline: empty while loading
//                           (worker_phase.h)
//   memory.headroom         duration: time until memory.current reaches
//                           memory.max at the growth rate over the engine's
//                           (short) headroom window; empty
//                           without a max, while loading, or when not growing
//   memory.events.{high,max,oom,oom_kill,oom_group_kill}
//                           count, since the engine began watching this run
//                           of the worker (first sample after forget())
//   swap.current            bytes, or % of memory.swap.max
//   swap.in, swap.out       pages/s (memory.stat pswpin/pswpout, or
//                           workingset_refault_anon for swap.in on 6.1)
//   cpu.time                duration (cpu.stat usage_usec)
//   cpu.usage               % of one CPU (200% = two busy CPUs) over the last
//                           interval of at least PolicyOptions::rate_interval
//   runtime                 duration since started_at
//   heartbeat.age           duration since the last WATCHDOG=1 (or start);
//                           only for workers with a watchdog or a heartbeat
//   heartbeat missed        flag: heartbeat.age > the watchdog interval
//   workdir.usage           bytes, or % of workdir_quota: the work dir's disk
//                           usage at the last scan (every workdir_scan_interval)
//   engine.NAME             a number: the series NAME of the worker's own
//                           metrics endpoint (engine.metrics), summed over its
//                           label sets, at the last scrape (a gauge)
//   engine.rate(NAME)       a number per second: NAME's increase per second
//                           between the last two successful scrapes (a
//                           counter); empty after a reset (it went down)
//                           The names are free (the server defines them): not
//                           in this catalogue, parsed by condition.h.
//   gpu.memory              bytes, or % of gpu.memory_max: the GPU memory its
//                           processes hold, summed over devices
//   gpu.device_memory       % of the memory of the devices it holds memory on
//   gpu.growth              bytes/min, or %/min of gpu.memory_max: gpu.memory's
//                           growth over the growth window, serving only (as
//                           memory.growth)
//   gpu.utilization         % of one GPU's compute (200% = two busy GPUs),
//                           summed over its processes
// Host metrics (host_rules:)
//   host.{memory,cpu,io}.pressure.{some,full}.{avg10,avg60,avg300}   %
//   host.swap.in, host.swap.out   pages/s (/proc/vmstat pswpin/pswpout)
//   host.mem.available      bytes, or % of MemTotal
//   host.mem.headroom       duration: time until MemAvailable reaches 0 at the
//                           rate it fell over the engine's host headroom window
//                           (the last sample interval, PolicyOptions); empty while it is
//                           not falling (steady or rising) or before two samples
//   host.swap.free          bytes (SwapFree), or % of SwapTotal; a host
//                           without swap has 0 bytes and 0% free (as earlyoom
//                           counts it: there is no swap to go to)
//   host.gpu.memory.available   bytes, or % of the device's memory: on the
//                           GPU with the least available (total - used)
//
// A measurement the sample does not provide is empty, and a condition on it
// is false (see condition.h).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "policy/samples.h"

namespace infervisor {

enum class MetricUnit {
    percent,  // 0-100
    percent_per_min,
    bytes,
    bytes_per_min,
    pages_per_second,
    duration,  // measured and compared in milliseconds
    count,
    flag,    // 1 or 0
    number,  // a plain number: an engine's series (engine.NAME, engine.rate(NAME))
};

enum class RuleScope { worker, host };

// How a threshold of this unit is written, for messages: "a percentage (e.g. 40%)".
std::string describe_unit(MetricUnit unit);

// A measurement rendered for people ("22.50%/min", "1.5G", "2m30s").
std::string format_measurement(MetricUnit unit, double value);
// The same, machine-readable for journal fields ("22.50", "1610612736", "150.000").
std::string format_journal_value(MetricUnit unit, double value);

struct MetricInfo {
    std::string name;  // as written in `when`, e.g. "memory.growth"
    MetricUnit unit;
    std::string journal_key;  // e.g. "MEMORY_GROWTH_PCT_PER_MIN"
};

// What a worker metric is measured from: the sample plus the rates only the
// engine, which sees the series, can compute.
struct WorkerInputs {
    const WorkerSample& sample;
    TimePoint now;
    std::optional<double> growth_bytes_per_min;
    std::optional<double> recent_growth_bytes_per_min;  // over the headroom window
    std::optional<double> swap_in_per_second;
    std::optional<double> swap_out_per_second;
    std::optional<double> cpu_usage_percent;
    std::optional<MemoryEvents> events_since_start;
    std::optional<double> gpu_growth_bytes_per_min = std::nullopt;
    // engine.NAME and engine.rate(NAME): the sample's engine reading and the
    // rates the engine derived from it; null when the sample has none.
    const EngineSeries* engine_values = nullptr;
    const EngineSeries* engine_rates = nullptr;
};

struct HostInputs {
    const HostSample& sample;
    std::optional<double> swap_in_per_second;
    std::optional<double> swap_out_per_second;
    // Change of MemAvailable per minute over the host headroom window
    // (negative while it falls).
    std::optional<double> mem_available_change_per_minute = std::nullopt;
};

struct WorkerMetric {
    MetricInfo info;
    std::function<std::optional<double>(const WorkerInputs&)> measure;
};

struct HostMetric {
    MetricInfo info;
    std::function<std::optional<double>(const HostInputs&)> measure;
};

const std::vector<WorkerMetric>& worker_metrics();
const std::vector<HostMetric>& host_metrics();

// The catalogue entries called `name` in `scope` (one per accepted unit).
std::vector<MetricInfo> metrics_named(RuleScope scope, std::string_view name);
// Every distinct name in `scope`, in catalogue order, for "known metrics" lists.
std::vector<std::string> metric_names(RuleScope scope);

const WorkerMetric* find_worker_metric(std::string_view name, MetricUnit unit);

// The journal field of an engine series' reading: ENGINE_ and the name in
// upper case, ':' and other non-alphanumerics as '_', with _PER_SEC for its
// rate ("ENGINE_LLAMACPP_TOKENS_PREDICTED_TOTAL_PER_SEC"); at most 53
// characters (journald's 64 with the INFERVISOR_ prefix).
std::string engine_journal_key(std::string_view series, bool rate);
const HostMetric* find_host_metric(std::string_view name, MetricUnit unit);

// memory.growth's definition, shared with victim selection: bytes/min as a
// percentage of memory.max, or of memory.current when there is no max.
std::optional<double> growth_percent(const WorkerSample& sample,
                                     std::optional<double> growth_bytes_per_min);

// memory.headroom: (memory.max - memory.current) / growth; 0 at or over the
// max; empty without a max or a current value, or when not growing.
std::optional<Duration> memory_headroom(const WorkerSample& sample,
                                        std::optional<double> growth_bytes_per_min);

// host.mem.headroom: MemAvailable / its fall rate; 0 when none is left;
// empty without MemAvailable or a rate, or when it is not falling.
std::optional<Duration> host_mem_headroom(const HostSample& sample,
                                          std::optional<double> change_per_minute);

// host.swap.free in % of SwapTotal; 0 on a host without swap.
std::optional<double> host_swap_free_percent(const HostSample& sample);

// The heartbeat's age: from the last WATCHDOG=1, or from the start when none
// came yet; empty for a worker that has neither a watchdog nor a heartbeat.
std::optional<Duration> heartbeat_age(const WorkerSample& sample, TimePoint now);

}  // namespace infervisor
