// WorkerRun: one run of a worker, from the launch that creates it
// (Worker::launch, or an adoption) to Worker::finish_run, which drops it.
// Everything here is about that run alone and goes with it, so nothing of
// one run can leak into the next; what outlives a run (restart counters, the
// last exit, the rule that parked the worker, the notify socket, the state)
// is the Worker's.
#pragma once

#include <sys/types.h>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "base/clock.h"
#include "policy/rule_spec.h"
#include "process/spawn_request.h"
#include "supervise/learned_watchdog.h"
#include "supervise/persisted_worker.h"
#include "supervise/worker_state.h"
#include "view/gpu_card_view.h"

namespace infervisor {

struct WorkerRun {
    // Where the run's process is. The WorkerState says what operators see
    // (starting, running, suspended, stopping); the stage says what the run
    // has of a process, which no state repeats.
    enum class Stage {
        launching,  // no process yet: being spawned, or criu restores it
        live,       // its main process runs
        exiting,    // its main process has exited; the cgroup is being emptied
    };
    Stage stage = Stage::launching;

    // The main process (0 while launching).
    pid_t pid = 0;
    uint64_t pid_start_time = 0;  // of pid, from /proc/PID/stat
    // Started by an earlier daemon: the main process is not our child, so
    // its exit status cannot be reaped.
    bool adopted = false;
    std::unique_ptr<boost::asio::posix::stream_descriptor> pidfd;  // watched for its exit
    SpawnRequest launched;  // how its process was started (exec probes run so)

    std::optional<TimePoint> started_at;
    // When it became `running` (Worker::ready_at()).
    std::optional<TimePoint> ready_at;
    bool signals_readiness = false;           // held in `starting` until it signalled
    bool ready_notified = false;              // READY=1 in this run
    bool gate_passed = false;                 // the gate probe passed in this run
    std::optional<TimePoint> last_heartbeat;  // last WATCHDOG=1
    LearnedWatchdog learned_watchdog;         // without a configured watchdog
    std::string phase;                        // the policy engine's, for displays
    std::optional<uint64_t> serving_baseline;
    std::optional<uint64_t> gpu_memory;  // at the policy's last sample, for displays
    std::optional<double> gpu_utilization;
    std::vector<GpuCardUse> gpu_cards;     // what it holds per card, for displays
    std::vector<std::string> gpu_devices;  // PCI addresses it held memory on, then
    bool ended_for_gpu = false;            // Worker::expect_gpu_room()
    // Suspended with a GPU release: what it moved out and from which cards;
    // a resume puts it back (Worker::gpu_room_to_resume()).
    std::optional<GpuRoomNeeded> gpu_released;
    WorkerState resume_to = WorkerState::running;  // suspended: the state it was frozen in

    // How it is being ended, when it is: what finish_run() makes of its end.
    bool stop_requested = false;     // an explicit stop: it ends stopped
    bool restart_requested = false;  // ... and starts again
    bool killed_by_policy = false;   // a rule, probe, watchdog or start timeout ended it
    std::optional<Then> policy_then;
    std::string policy_rule;        // the rule behind policy_then
    std::string kill_reason;        // why a probe ended it, for ExitReason
    bool start_timed_out = false;   // no readiness within start_timeout
    bool ended_for_memory = false;  // Worker::expect_memory_room()
    bool host_ran_out = false;      // ... by a host rule
    // Written for a `then: park` that has not happened yet.
    std::optional<ParkedCheckpoint> checkpoint_for_park;
};

}  // namespace infervisor
