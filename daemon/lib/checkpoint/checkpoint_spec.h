// CheckpointSpec: what the configuration says about one worker's checkpoints.
// Plain data, parsed by parse_checkpoint_keys(); equality decides on reload
// whether it changed.
#pragma once

#include <csignal>
#include <cstdint>

#include "base/clock.h"

namespace infervisor {

// How a checkpoint is taken. cooperative: the worker writes its own state on
// `signal` and answers CHECKPOINT=1. criu: the daemon dumps the worker's
// process tree with criu(8) and restores it on the next start, for workers
// that cannot cooperate (see criu_command.h for what that takes).
// llama_server (`method: llama-server`): the daemon asks the worker's
// llama-server (its `engine:`) to save each slot into the staging dir, its
// --slot-save-path, and restores them through it once the next run is ready
// (engine/llama_slots.h, engine/llama_record.h).
enum class CheckpointMethod { cooperative, criu, llama_server };

// "cooperative", "criu", "llama-server": as the configuration spells it.
const char* checkpoint_method_name(CheckpointMethod method);

// The most disk all of one worker's checkpoints (kept and being written) may
// take: a share of the file system that holds them, or a number of bytes.
// There is no "none": every worker's checkpoints are bounded (issue 26 #9).
struct CheckpointQuota {
    // 1..100: percent of the checkpoint file system's size; 0: `bytes`.
    int percent = 25;
    uint64_t bytes = 0;

    bool operator==(const CheckpointQuota&) const = default;
};

struct CheckpointSpec {
    CheckpointMethod method = CheckpointMethod::cooperative;
    // Sent to the main process to ask for a checkpoint; the worker writes its
    // state into $INFERVISOR_CHECKPOINT_DIR and answers CHECKPOINT=1.
    int signal = SIGUSR1;
    // How long the daemon waits for CHECKPOINT=1 after the signal; with
    // criu, how long one criu dump (or restore) may take before it is killed;
    // with llama-server, how long all the saves of one checkpoint (or all the
    // restores of one start) may take together.
    Duration timeout = std::chrono::minutes(2);
    // Zero: no periodic checkpoints. Otherwise a checkpoint every `interval`
    // while the worker runs; the worker keeps running.
    Duration interval = Duration::zero();
    // Complete checkpoints kept; older ones are deleted.
    int64_t keep = 2;
    // All of this worker's checkpoints together; see checkpoint_retention.h.
    CheckpointQuota quota;
    // Zero: kept by count (and quota) only. Otherwise a complete checkpoint
    // older than this is deleted at the next checkpoint (except the newest)
    // and by the sweep between checkpoints (the newest too).
    Duration max_age = Duration::zero();

    bool operator==(const CheckpointSpec&) const = default;
};

}  // namespace infervisor
