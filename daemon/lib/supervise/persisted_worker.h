// PersistedWorker: what one worker's supervision leaves behind for the next
// daemon, in <runtime_dir>/state/NAME — everything about a run that cannot be
// rediscovered from the kernel after a daemon restart, crash or upgrade: the
// main pid and its start time (so that a recycled pid is never taken for the
// worker), when the run started, its restart counters, the last exit, its
// state (a parked or failed worker stays so; a suspended one stays frozen,
// with who suspended it), and the configuration snapshot
// its spec came from (config_snapshot.h; how a spec changed while no daemon
// ran is detected).
//
// Versions: the first line names the format ("infervisor-worker-state 1").
// A daemon reads its own version and every older one (this is the first);
// a later format keeps the file's name and the form of its first line, so
// that an older daemon (a package downgrade) knows the file for one it
// cannot read. A file that cannot be read never costs a running worker its
// model: adoption then takes the run from its cgroup (adoption.h).
//
// Contract: the file is written atomically (a temporary in the same dir, then
// rename), is at most kMaxStateFileSize bytes, and holds one "key=value" line
// per field after a version line. It is root's own file under a root-only
// dir, but parse_persisted_worker() still trusts nothing: an unknown version,
// a missing or malformed field or an oversized file is an error (the caller
// then treats the worker as having no state), never a crash. Unknown keys are
// ignored, so a newer daemon may add fields. Time points are the steady
// clock's (CLOCK_MONOTONIC): they stay valid across daemon runs within one
// boot, and /run does not outlive a boot.
#pragma once

#include <sys/types.h>

#include <deque>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "policy/rule_spec.h"
#include "supervise/restart_tracker.h"
#include "supervise/worker_state.h"

namespace infervisor {

inline constexpr size_t kMaxStateFileSize = 16 * 1024;

// The checkpoint a policy rule had written before it parked the worker
// (action: checkpoint, then: park): what its next start restores. The
// worker shows as `checkpointed` (worker_state.h).
struct ParkedCheckpoint {
    std::string path;
    std::optional<uint64_t> bytes;  // unknown when it could not be measured
    TimePoint written_at;

    bool operator==(const ParkedCheckpoint&) const = default;
};

struct PersistedWorker {
    std::string name;
    std::string config_snapshot;  // ConfigSnapshots id; empty: unknown
    WorkerState state = WorkerState::stopped;
    pid_t pid = 0;                // main process of the run; 0: none
    uint64_t pid_start_time = 0;  // field 22 of /proc/PID/stat (clock ticks since boot)
    std::optional<TimePoint> started_at;
    // A stop, restart or policy action under way when the daemon ended, so
    // that the next one finishes it.
    bool stop_requested = false;
    bool restart_requested = false;
    std::optional<Then> policy_then;
    std::string policy_rule;
    RestartHistory restarts;
    // When the host last ran out of memory with it (host_kill_guard.h),
    // oldest first; empty in a file of an older daemon.
    std::deque<TimePoint> host_kills;
    std::string last_exit;
    std::string status_text;
    // state suspended (worker_suspension.h): who suspended it ("rule 'x'",
    // "infervisorctl"; empty in a file of an older daemon, which did not
    // say), since when, memory.current when its reclaim began (what a
    // resume wants back; unknown if the reclaim had not begun), and whether
    // the run was still starting (loading) when it was frozen.
    std::string suspended_by;
    std::optional<TimePoint> suspended_since;
    std::optional<uint64_t> suspended_memory;
    bool suspended_starting = false;
    // With a step around the freeze (vllm-sleep, the GPU release): whether
    // it succeeded (a resume wakes or restores only then); empty when not said
    // (an older daemon's file: a resume asks for the wake anyway).
    std::optional<bool> suspended_engine_slept;
    // The step taken around the freeze (SUSPEND_METHOD: vllm-sleep,
    // cuda-checkpoint); empty: none, or an older daemon's file.
    std::string suspended_step;
    std::optional<ParkedCheckpoint> checkpoint;  // state parked: see above

    bool operator==(const PersistedWorker&) const = default;
};

std::string format_persisted_worker(const PersistedWorker& worker);
Result<PersistedWorker> parse_persisted_worker(std::string_view text);

// <dir>/NAME, written through <dir>/.NAME.tmp (worker names never start with
// a dot). Creates `dir` (0700) if needed.
Result<void> write_persisted_worker(const std::filesystem::path& dir,
                                    const PersistedWorker& worker);
// ENOENT when there is none; any other error for an unreadable, oversized or
// malformed file.
Result<PersistedWorker> read_persisted_worker(const std::filesystem::path& dir,
                                              const std::string& name);
void remove_persisted_worker(const std::filesystem::path& dir, const std::string& name);
// Names with a state file in `dir` (valid worker names only).
std::vector<std::string> persisted_worker_names(const std::filesystem::path& dir);

}  // namespace infervisor
