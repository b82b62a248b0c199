// The worker's checkpoint: a small text file "worker=NAME\nserved=K\n" named
// "checkpoint" in $INFERVISOR_CHECKPOINT_DIR, replaced atomically (rename).
#pragma once

#include <string>

namespace example_worker {

struct CheckpointOutcome {
    bool ok = false;
    std::string detail;  // the file written, or what went wrong
};

CheckpointOutcome write_checkpoint(const std::string& dir, const std::string& name, long served);

// `from`: a checkpoint file, or a directory holding one. The served count, or
// !ok with the reason.
struct RestoredCheckpoint {
    bool ok = false;
    long served = 0;
    std::string detail;
};
RestoredCheckpoint read_checkpoint(const std::string& from);

}  // namespace example_worker
