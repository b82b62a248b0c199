// CUDA checkpoint: moving a running CUDA process's device memory into its
// host memory and releasing the GPU, and back — the GPU-freeing half of
// `action: suspend` (supervise/worker_gpu_release.h). Through the CUDA driver
// API's checkpoint calls (cuCheckpointProcessLock, ...Checkpoint, ...Restore,
// ...Unlock, ...GetState; libcuda of driver r570 and later), loaded at run
// time with dlopen: no SDK at build time.
//
// Runs only in a short-lived helper process (`infervisord --internal-helper
// cuda-checkpoint`, app/helper_mode.h), never in the daemon: libcuda is
// large, starts threads and would stay mapped — and locked — in the daemon.
//
// What the driver needs (NVIDIA's cuda-checkpoint documentation): a process
// that uses no UVM (cudaMallocManaged) and no IPC memory, on a driver that
// has the calls; the GPU memory lands in the process's host memory (charged
// to its cgroup) until the restore, which needs the same room on the device
// again.
//
// Contract of release(pids): the CUDA processes among `pids` (GetState
// answers; a pid it does not know is not one) are locked (each within
// `lock_timeout`: its CUDA calls in flight finish, later ones block), then
// checkpointed. All or nothing: when a lock or a checkpoint fails, what was
// done is undone (restored, unlocked) and the processes run on as before.
// A process already checkpointed (an earlier release that was not undone)
// counts as released. No CUDA process among them is a failure.
// Contract of restore(pids): each checkpointed process is restored, then
// every locked one unlocked; a running one is left alone. Every process is
// tried even when one fails.
// Both answer one line per CUDA process and the outcome (CudaCheckpointAnswer).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace infervisor {

inline constexpr const char* kCudaLibrary = "libcuda.so.1";
inline constexpr const char* kCudaCheckpointHelper = "cuda-checkpoint";

enum class CudaCheckpointAction { release, restore };

// "release", "restore"; the helper's argument.
const char* cuda_checkpoint_action_name(CudaCheckpointAction action);

// CUprocessState, as cuda.h numbers it, and "unknown" for anything else.
enum class CudaProcessState {
    running = 0,
    locked = 1,
    checkpointed = 2,
    failed = 3,
    checkpointing = 4,
    restoring = 5,
    unknown
};
const char* cuda_process_state_name(CudaProcessState state);

struct CudaProcessOutcome {
    pid_t pid = 0;
    CudaProcessState before = CudaProcessState::unknown;
    CudaProcessState after = CudaProcessState::unknown;
    std::string error;  // empty: done; else "cuCheckpointProcessLock: CUDA_ERROR_...: text"
};

struct CudaCheckpointAnswer {
    bool ok = false;
    std::string detail;  // in words: what was done, or why not
    std::vector<CudaProcessOutcome> processes;
};

// The helper's side: loads `library` (kCudaLibrary, or a path), runs the
// action on `pids`. Any failure to load or initialise is an answer with
// ok == false, never an exception.
CudaCheckpointAnswer run_cuda_checkpoint(const std::string& library, CudaCheckpointAction action,
                                         const std::vector<pid_t>& pids,
                                         std::chrono::milliseconds lock_timeout);

// The answer as the helper writes it on its stdout, and read back by the
// daemon. Its text comes from a process that runs as the worker: parsed
// strictly, bounded (kMaxCudaProcesses lines of at most 1 KiB).
inline constexpr size_t kMaxCudaProcesses = 256;
std::string format_cuda_checkpoint_answer(const CudaCheckpointAnswer& answer);
Result<CudaCheckpointAnswer> parse_cuda_checkpoint_answer(std::string_view text);

// `infervisord --internal-helper cuda-checkpoint LIBRARY ACTION TIMEOUT_MS
// PID...`: `args` are the words after the helper's name (LIBRARY on);
// writes the answer to `answer_fd`.
// Exit code 0 when the answer says ok, 1 when it says not, 2 for bad
// arguments.
int cuda_checkpoint_helper_main(const std::vector<std::string_view>& args, int answer_fd);

}  // namespace infervisor
