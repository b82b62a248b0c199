// WorkerSpec: what the configuration says about one worker, after parsing and
// before validation. Plain data; equality decides on reload whether a running
// worker must restart (any difference does).
#pragma once

#include <sys/types.h>

#include <csignal>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/units.h"
#include "checkpoint/checkpoint_spec.h"
#include "engine/engine_spec.h"
#include "engine/suspend_spec.h"
#include "gpu/gpu_spec.h"
#include "policy/rule_spec.h"
#include "probe/probe_spec.h"
#include "workdir/workdir_spec.h"

namespace infervisor {

using namespace std::chrono_literals;

enum class RestartMode { never, on_failure, always };

struct RestartSpec {
    RestartMode mode = RestartMode::on_failure;
    // Delay before restart n (n >= 1) is backoff_initial * 2^(n-1), capped at
    // backoff_max. The count resets after a run that lasted longer than
    // backoff_max (the worker was healthy for a while).
    Duration backoff_initial = 1s;
    Duration backoff_max = 1min;
    // More than start_limit_burst starts within start_limit_interval trips the
    // circuit breaker: the worker goes to state `failed` until asked to start.
    int64_t start_limit_burst = 5;
    Duration start_limit_interval = 10min;

    bool operator==(const RestartSpec&) const = default;
};

struct MemorySpec {
    ByteLimit max;          // memory.max; required by validation
    ByteLimit high;         // memory.high; nullopt = "max" (no throttling)
    ByteLimit swap_max{0};  // memory.swap.max; default 0: inference workers do not swap
    // What the worker needs to start: it waits (state `waiting`) until the
    // host can give this much (policy/admission.h). None: starts at once.
    ByteLimit reserve;

    bool operator==(const MemorySpec&) const = default;
};

// `user: dynamic`: the worker runs under a uid allocated for it alone
// (process/dynamic_users.h). Not a user name: no account is needed.
inline constexpr char kDynamicUser[] = "dynamic";

struct WorkerSpec {
    std::string name;
    std::vector<std::string> command;  // argv; command[0] is an absolute path
    std::map<std::string, std::string> environment;
    // Secrets as files: NAME -> source file, read by the daemon at each start
    // and given to the worker in $CREDENTIALS_DIRECTORY/NAME (see
    // supervise/worker_credentials.h).
    std::map<std::string, std::filesystem::path> credentials;
    // A user name, or kDynamicUser: a uid of the worker's own (the default of
    // configuration files; specs built in code default to root).
    std::string user = "root";
    std::string group;  // empty: the user's primary group
    std::vector<std::string> supplementary_groups;
    MemorySpec memory;
    std::optional<int64_t> pids_max;    // nullopt = "max"
    std::optional<int64_t> cpu_weight;  // 1..10000; nullopt = kernel default (100)
    RestartSpec restart;
    int stop_signal = SIGTERM;
    Duration stop_timeout = 30s;
    // /proc/PID/oom_score_adj of the worker (-1000..1000). Default 0: the
    // daemon's own protection (-900 in the unit) is not passed on.
    int64_t oom_score_adj = 0;
    // true: the worker is "running" only after it sends READY=1 on NOTIFY_SOCKET
    // (systemd Type=notify semantics); false: as soon as it has been executed.
    bool notify = false;
    // Notify workers only: a run without READY=1 within this time is a failed
    // start (cgroup killed; restart policy and start limit apply). 0 = wait
    // forever. The default is far above systemd's 90s: loading a large model
    // from disk can take minutes, and killing a slow loader loses that work.
    Duration start_timeout = 10min;
    // 0 = off. Otherwise the worker must send WATCHDOG=1 at least this often.
    Duration watchdog = 0ms;
    // No `watchdog:` given: a worker that sends WATCHDOG=1 on its own is
    // held to the pace it has shown (supervise/learned_watchdog.h).
    // `watchdog: 0s` turns that off.
    bool learn_watchdog = true;
    // Health probes (startup, readiness, liveness); see probe/probe_spec.h.
    ProbesSpec probes;
    // The inference server the worker runs, as the daemon reaches it (the
    // engine adapters, the metrics scrape); see engine/engine_spec.h.
    std::optional<EngineSpec> engine;
    // The GPUs it is given and the cap of its GPU memory; see gpu/gpu_spec.h.
    std::optional<GpuSpec> gpu;
    // Private work dir, extra dirs (protected from tmpfiles cleanup), quota.
    WorkDirSpec workdir;
    // Cooperative checkpoints: the signal, the wait for CHECKPOINT=1, the
    // period, how many are kept.
    CheckpointSpec checkpoint;
    // How it is suspended: a freeze, or vLLM put to sleep first; see
    // engine/suspend_spec.h.
    SuspendSpec suspend;
    // true: the worker sees its work dir's tmp as /tmp and /var/tmp (a mount
    // namespace of its own, as systemd's PrivateTmp=yes), so whatever it keeps
    // there, under any hard-coded path, is protected like its work dir.
    // false: it shares the host's /tmp and /var/tmp.
    bool private_tmp = true;
    // The worker's own policy rules (merged over the config's default rules
    // by name; see policy/rule_config.h).
    std::vector<RuleSpec> rules;
    // Host-level rules pick victims by lowest priority first; a protected
    // worker is never picked by them.
    int64_t priority = 0;
    bool is_protected = false;
    // A host rule's `action: preempt` may suspend it (frozen, its memory in
    // swap, resume_when brings it back) rather than kill it. false: its
    // clients must see it gone, not hanging (policy/preempt_ladder.h).
    bool preemptible = true;
    // `admission: overcommit`: start even when memory.reserve does not fit
    // (the reserve still counts against the others).
    bool overcommit = false;

    bool operator==(const WorkerSpec&) const = default;
};

// Where a worker was defined, for messages (not part of the spec's identity).
struct SourceLocation {
    std::string file;
    int line = 0;
    int column = 0;
    std::string format() const;
};

// Where a worker's list item and each key written in it ("command",
// "memory", "probes", ...) stand, so that a problem with a field is
// reported at its line.
struct WorkerSource {
    SourceLocation item;
    std::map<std::string, SourceLocation> keys;
    // `key`'s location when the worker wrote it; else the item's (a value
    // from `defaults:`, or one not written at all).
    const SourceLocation& of(const std::string& key) const;
};

}  // namespace infervisor
