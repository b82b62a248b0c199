#include "policy/sampler.h"

#include <cerrno>

#include "base/file_io.h"
#include "base/units.h"
#include "policy/psi_reader.h"
#include "policy/stat_files.h"

namespace infervisor {

namespace {

namespace fs = std::filesystem;

// Turns a failed read into "absent", remembering why unless the file simply
// does not exist.
template <class T>
std::optional<T> keep(Result<T> result, std::vector<std::string>& errors) {
    if (result) return std::move(result).value();
    if (result.error().code != ENOENT) errors.push_back(result.error().message());
    return std::nullopt;
}

// A single-number cgroup file ("1234" or "max"); "max" reads as empty.
Result<std::optional<uint64_t>> read_limit(const fs::path& path) {
    auto text = read_file(path);
    if (!text) return text.error();
    auto value = parse_size(trim(*text));
    if (!value) return plain_error(path.string() + ": " + value.error().what);
    return *value;
}

std::optional<uint64_t> limit(const fs::path& path, std::vector<std::string>& errors) {
    return keep(read_limit(path), errors).value_or(std::nullopt);
}

void read_memory_stat(const fs::path& dir, WorkerSample& s) {
    auto stat = keep(read_counters(dir / "memory.stat"), s.read_errors);
    if (!stat) return;
    s.swapin_pages = find_counter(*stat, "pswpin");
    if (!s.swapin_pages) s.swapin_pages = find_counter(*stat, "workingset_refault_anon");
    s.swapout_pages = find_counter(*stat, "pswpout");
}

}  // namespace

WorkerSample sample_worker(const fs::path& dir, TimePoint now) {
    WorkerSample s;
    s.time = now;
    auto& errors = s.read_errors;
    s.memory_current = limit(dir / "memory.current", errors);
    s.memory_max = limit(dir / "memory.max", errors);
    s.memory_high = limit(dir / "memory.high", errors);
    s.swap_current = limit(dir / "memory.swap.current", errors);
    s.swap_max = limit(dir / "memory.swap.max", errors);
    s.memory_pressure = keep(read_psi(dir / "memory.pressure"), errors);
    s.cpu_pressure = keep(read_psi(dir / "cpu.pressure"), errors);
    s.io_pressure = keep(read_psi(dir / "io.pressure"), errors);
    if (auto events = keep(read_counters(dir / "memory.events"), errors))
        s.memory_events = memory_events_from(*events);
    if (auto cpu = keep(read_counters(dir / "cpu.stat"), errors))
        s.cpu_usage_usec = find_counter(*cpu, "usage_usec");
    read_memory_stat(dir, s);
    return s;
}

void sample_worker_extras(const fs::path& dir, WorkerSample& s) {
    s.memory_peak = limit(dir / "memory.peak", s.read_errors);
    s.pids_current = limit(dir / "pids.current", s.read_errors);
}

HostSample sample_host(const fs::path& procfs, TimePoint now) {
    HostSample s;
    s.time = now;
    auto& errors = s.read_errors;
    s.memory_pressure = keep(read_psi(procfs / "pressure/memory"), errors);
    s.cpu_pressure = keep(read_psi(procfs / "pressure/cpu"), errors);
    s.io_pressure = keep(read_psi(procfs / "pressure/io"), errors);
    if (auto vmstat = keep(read_counters(procfs / "vmstat"), errors)) {
        s.pswpin = find_counter(*vmstat, "pswpin");
        s.pswpout = find_counter(*vmstat, "pswpout");
    }
    if (auto text = keep(read_file(procfs / "meminfo"), errors)) {
        MemInfo info = parse_meminfo(*text);
        s.mem_total = info.mem_total;
        s.mem_available = info.mem_available;
    }
    return s;
}

}  // namespace infervisor
