// CheckpointSpec: what the configuration says about one worker's checkpoints.
// Plain data, parsed by parse_checkpoint_keys(); equality decides on reload
// whether it changed.
#pragma once

#include <csignal>
#include <cstdint>

#include "base/clock.h"

namespace infervisor {

struct CheckpointSpec {
    // Sent to the main process to ask for a checkpoint; the worker writes its
    // state into $INFERVISOR_CHECKPOINT_DIR and answers CHECKPOINT=1.
    int signal = SIGUSR1;
    // How long the daemon waits for CHECKPOINT=1 after the signal.
    Duration timeout = std::chrono::minutes(2);
    // Zero: no periodic checkpoints. Otherwise a checkpoint every `interval`
    // while the worker runs; the worker keeps running.
    Duration interval = Duration::zero();
    // Complete checkpoints kept; older ones are deleted.
    int64_t keep = 2;

    bool operator==(const CheckpointSpec&) const = default;
};

}  // namespace infervisor
