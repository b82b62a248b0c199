// CgroupStats: the one reader of a cgroup's statistics files. Everything
// outside cgroup/ that wants a number the kernel keeps for a cgroup (the
// policy's sampler, a worker's status, the metrics, the admission check) asks
// it, so "where is the cgroup code?" has one answer and each file has one
// parser (stat_parse.h, psi.h).
//
// Contract: each call is one read of one interface file under dir().path(),
// nothing is cached (the caller reads once per tick and keeps the sample).
// Given a StatFileSet (stat_file_set.h), the file is read through its held
// descriptor instead of being opened by path: the policy's sampler, which
// reads every worker at every tick, keeps one set per worker run.
// A file that is missing fails with code ENOENT: the controller is not
// enabled there or the kernel is older (memory.peak: 5.19, memory.swap.*:
// with swap accounting); callers treat that as "absent". A file that exists
// but cannot be read or parsed fails with its path in the message. The root
// is injectable: a CgroupDir on a temp directory holding the same files is
// read the same way (the unit tests' fixtures).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "cgroup/cgroup_dir.h"
#include "cgroup/psi.h"
#include "cgroup/stat_file_set.h"
#include "cgroup/stat_parse.h"

namespace infervisor {

// Cumulative counters of memory.events (since the cgroup was created).
struct MemoryEvents {
    uint64_t low = 0;
    uint64_t high = 0;
    uint64_t max = 0;
    uint64_t oom = 0;
    uint64_t oom_kill = 0;
    uint64_t oom_group_kill = 0;

    bool operator==(const MemoryEvents&) const = default;
};

// memory.events' counters; keys the kernel does not print stay 0.
MemoryEvents memory_events_from(const Counters& counters);

// A single-value file's number, or "max" (no limit), as empty.
using CgroupValue = Result<std::optional<uint64_t>>;

// The number, empty when the file says "max", is missing or unreadable (for
// callers that show a number when there is one and need no reason).
std::optional<uint64_t> value_or_empty(const CgroupValue& value);

// The files that a worker's signal watch holds open (psi_trigger.h,
// kernfs_watch.h), named here with the others.
inline constexpr char kMemoryPressureFile[] = "memory.pressure";
inline constexpr char kMemoryEventsFile[] = "memory.events";

class CgroupStats {
  public:
    explicit CgroupStats(CgroupDir dir) : dir_(std::move(dir)) {}
    // Reads through `held`, whose dir() is this cgroup's (it must outlive this).
    explicit CgroupStats(StatFileSet& held) : dir_(std::filesystem::path()), held_(&held) {}

    const std::filesystem::path& path() const { return held_ ? held_->dir() : dir_.path(); }

    CgroupValue memory_current() const { return single_value("memory.current"); }
    CgroupValue memory_max() const { return single_value("memory.max"); }
    CgroupValue memory_high() const { return single_value("memory.high"); }
    CgroupValue memory_peak() const { return single_value("memory.peak"); }
    CgroupValue swap_current() const { return single_value("memory.swap.current"); }
    CgroupValue swap_max() const { return single_value("memory.swap.max"); }
    CgroupValue pids_current() const { return single_value("pids.current"); }

    Result<PsiReading> memory_pressure() const { return pressure(kMemoryPressureFile); }
    Result<PsiReading> cpu_pressure() const { return pressure("cpu.pressure"); }
    Result<PsiReading> io_pressure() const { return pressure("io.pressure"); }

    Result<MemoryEvents> memory_events() const;
    // Views of the file's text (stat_parse.h), valid until the next read
    // through this object (or, held, through any StatFileSet of the thread).
    Result<Counters> memory_stat() const { return counters("memory.stat"); }
    Result<Counters> cpu_stat() const { return counters("cpu.stat"); }

  private:
    CgroupValue single_value(const char* file) const;
    Result<PsiReading> pressure(const char* file) const;
    Result<Counters> counters(const char* file) const;
    // The file's text, valid until the next call.
    Result<std::string_view> text(const char* file) const;

    CgroupDir dir_;  // empty when held_: the set's dir() is the path
    StatFileSet* held_ = nullptr;
    mutable std::string buffer_;  // the last text read by path
};

}  // namespace infervisor
