// Event: one thing that happened to a worker or to the daemon, with the
// numbers that matter. Events go to the journal (one entry each, with a
// MESSAGE_ID per kind, explained in the catalog) and to control-socket
// subscribers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace infervisor {

enum class EventKind {
    started,                  // the worker process was executed in its cgroup
    ready,                    // READY=1 received (notify workers) or started (others)
    exited,                   // the main process ended (fields say how)
    oom_killed,               // the kernel OOM killer ended the worker inside its cgroup
    restarting,               // a restart is scheduled after a backoff
    failed,                   // the start limit tripped; no more restarts until asked
    parked,                   // a policy rule ended the run with `then: park`; waits for a start
    stopped,                  // stopped on request; cgroup removed
    stop_escalated,           // the stop timeout passed; the cgroup was killed
    leftover_reaped,          // a worker cgroup from an earlier daemon run was cleaned up
    start_failed,             // the worker could not be started (spawn or cgroup error)
    config_reloaded,          // a new configuration was applied
    config_rejected,          // a new configuration was invalid; the old one stays
    policy_action,            // a policy rule acted on a worker
    notify_rejected,          // a notify message was dropped (foreign sender, malformed)
    workdir_over_quota,       // a work dir's usage rose above its workdir_quota
    protected_entry_deleted,  // someone other than the worker deleted from a protected dir
    workdir_removed,          // a removed worker's work dir was deleted on request
    start_delayed,            // a start waits for a lock someone else holds on a worker dir
    probe_changed,            // a health probe's verdict changed (passing / failing)
    probe_failed,             // a failing startup or liveness probe ended the run
    daemon_started,
    checkpoint_written,          // CHECKPOINT=1: the staging dir was published as a checkpoint
    checkpoint_failed,           // no CHECKPOINT=1 in time, or nothing usable was written
    checkpoint_restoring,        // a run was started with INFERVISOR_RESTORE_FROM
    checkpoint_restored,         // READY=1 from a run that was given a checkpoint
    checkpoint_retired,          // the sweep deleted a checkpoint (max_age, quota, keep)
    restart_waiting_for_memory,  // a restart after a memory kill waits for the host to have room
    daemon_stopping,
    adopted,               // a run left by an earlier daemon was taken over
    suspended,             // frozen and its memory pushed out (bytes reclaimed, seconds)
    resumed,               // a suspended worker was thawed
    waiting,               // its memory.reserve does not fit: it waits instead of starting
    admitted,              // a waiting worker's reserve fits now: it starts
    tmp_file_protected,    // a file a worker sharing the host's /tmp holds there is kept from aging
    watchdog_learned,      // a worker that sends WATCHDOG=1 unasked is held to its pace
    usage_capped,          // a work dir's scan stopped at a cap: its usage is a lower bound
    checkpoint_deleted,    // an operator deleted checkpoints (infervisorctl checkpoints --delete)
    engine_series_absent,  // a series a worker's rules name is not in its metrics (once per run)
    models_unloaded,       // its server was asked to unload its models (the preempt ladder)
    engine_metrics_failed,  // its metrics endpoint did not answer usably (once per run)
    gpu_fault,              // a GPU went into error or vanished from its driver (the host's)
    gpu_recovered,          // a GPU in error answers again
    gpu_xid,                // NVIDIA's driver reported an Xid error on a GPU
    // New kinds go here, and kLastEventKind below moves with them.
};

// The last enumerator: tests walk every kind up to it.
inline constexpr EventKind kLastEventKind = EventKind::gpu_xid;

// "oom-killed", "start-limit-hit"... the value of INFERVISOR_EVENT=.
std::string_view event_name(EventKind kind);
// 32 lowercase hex digits, the journal MESSAGE_ID of that kind.
std::string_view event_message_id(EventKind kind);
// syslog priority (LOG_INFO, LOG_WARNING, ...).
int event_priority(EventKind kind);

struct Event {
    EventKind kind;
    std::string worker;   // empty for daemon-wide events
    std::string message;  // one human sentence, with the numbers in it
    // Extra journal fields; keys are upper case without the INFERVISOR_ prefix
    // ("EXIT_CODE" becomes INFERVISOR_EXIT_CODE=).
    std::vector<std::pair<std::string, std::string>> fields;
    uint64_t realtime_usec = 0;  // filled in by EventBus::emit when 0
};

}  // namespace infervisor
