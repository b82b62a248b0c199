#include "policy/sampler.h"

#include <cerrno>

#include "base/file_io.h"
#include "cgroup/cgroup_stats.h"
#include "policy/stat_files.h"

namespace infervisor {

namespace {

namespace fs = std::filesystem;

// Turns a failed read into "absent", remembering why unless the file simply
// does not exist.
template <class T>
std::optional<T> keep(const Result<T>& result, std::vector<std::string>& errors) {
    if (result) return result.value();
    if (result.error().code != ENOENT) errors.push_back(result.error().message());
    return std::nullopt;
}

std::optional<uint64_t> limit(const CgroupValue& value, std::vector<std::string>& errors) {
    return keep(value, errors).value_or(std::nullopt);
}

void read_memory_stat(const CgroupStats& stats, WorkerSample& s) {
    auto stat = keep(stats.memory_stat(), s.read_errors);
    if (!stat) return;
    s.swapin_pages = find_counter(*stat, "pswpin");
    if (!s.swapin_pages) s.swapin_pages = find_counter(*stat, "workingset_refault_anon");
    s.swapout_pages = find_counter(*stat, "pswpout");
    s.memory_anon = find_counter(*stat, "anon");
    s.memory_unevictable = find_counter(*stat, "unevictable");
}

}  // namespace

WorkerSample sample_worker(const fs::path& dir, TimePoint now) {
    return sample_worker(CgroupStats{CgroupDir(dir)}, now);
}

WorkerSample sample_worker(const CgroupStats& stats, TimePoint now) {
    WorkerSample s;
    s.time = now;
    auto& errors = s.read_errors;
    s.memory_current = limit(stats.memory_current(), errors);
    s.memory_max = limit(stats.memory_max(), errors);
    s.memory_high = limit(stats.memory_high(), errors);
    s.swap_current = limit(stats.swap_current(), errors);
    s.swap_max = limit(stats.swap_max(), errors);
    s.memory_pressure = keep(stats.memory_pressure(), errors);
    s.cpu_pressure = keep(stats.cpu_pressure(), errors);
    s.io_pressure = keep(stats.io_pressure(), errors);
    s.memory_events = keep(stats.memory_events(), errors);
    if (auto cpu = keep(stats.cpu_stat(), errors))
        s.cpu_usage_usec = find_counter(*cpu, "usage_usec");
    read_memory_stat(stats, s);
    return s;
}

void sample_worker_extras(const fs::path& dir, WorkerSample& s) {
    CgroupStats stats{CgroupDir(dir)};
    s.memory_peak = limit(stats.memory_peak(), s.read_errors);
    s.pids_current = limit(stats.pids_current(), s.read_errors);
}

HostSample sample_host(const fs::path& procfs, TimePoint now) {
    StatFileSet files(procfs);
    return sample_host(files, now);
}

HostSample sample_host(StatFileSet& procfs, TimePoint now) {
    HostSample s;
    s.time = now;
    auto& errors = s.read_errors;
    // The text of `name` under procfs, parsed by `parse` (which never fails).
    auto parsed = [&](const char* name, auto parse) -> Result<decltype(parse(""))> {
        auto text = procfs.read(name);
        if (!text) return text.error();
        return parse(*text);
    };
    auto psi = [&](const char* name) -> Result<PsiReading> {
        auto text = procfs.read(name);
        if (!text) return text.error();
        auto reading = parse_psi(*text);
        if (!reading)
            return plain_error((procfs.dir() / name).string() + ": " + reading.error().what);
        return reading;
    };
    s.memory_pressure = keep(psi("pressure/memory"), errors);
    s.cpu_pressure = keep(psi("pressure/cpu"), errors);
    s.io_pressure = keep(psi("pressure/io"), errors);
    if (auto vmstat = keep(parsed("vmstat", parse_counters), errors)) {
        s.pswpin = find_counter(*vmstat, "pswpin");
        s.pswpout = find_counter(*vmstat, "pswpout");
    }
    if (auto info = keep(parsed("meminfo", parse_meminfo), errors)) {
        s.mem_total = info->mem_total;
        s.mem_available = info->mem_available;
        s.swap_total = info->swap_total;
        s.swap_free = info->swap_free;
    }
    return s;
}

}  // namespace infervisor
