// WorkerGpuRelease: the GPU step of one worker's suspension (`suspend: {gpu:
// release}`, the default for a worker that holds NVIDIA GPU memory):
// release() moves the device memory of the worker's CUDA processes into
// their host memory and frees the GPU, restore() brings it back
// (gpu/cuda_checkpoint.h). Each is one run of the daemon's helper,
// `infervisord --internal-helper cuda-checkpoint`, as the worker's own user
// (the driver lets a user checkpoint its own processes; no capability of
// the daemon's is lent), on a background thread: libcuda is never loaded
// into the daemon, and the loop never waits for the driver.
//
// Contract: event-loop thread only; one operation at a time (a second one
// cancels the first). `done` is called exactly once per operation, on the
// loop, never from within release()/restore(), and never after cancel() or
// the destruction of this object (an operation's helper still runs to its
// end, bounded by its deadline: the lock timeout plus the copy's allowance;
// the destructor waits for it). The answer's detail is the helper's, in
// words; a helper that could not run or answered nothing readable is an
// error that says so.
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "gpu/cuda_checkpoint.h"
#include "policy/stat_files.h"
#include "process/helper_process.h"
#include "supervise/background_work.h"

namespace infervisor {

class WorkerGpuRelease {
  public:
    // How long a lock may wait for the CUDA work in flight.
    static constexpr Duration kLockTimeout = std::chrono::seconds(10);
    // The copy between device and host: the deadline's part beyond the lock.
    static constexpr Duration kCopyAllowance = std::chrono::minutes(2);

    struct Request {
        std::string program;  // an infervisord binary (Paths::helper_program)
        std::string library;  // libcuda (Paths::cuda_library)
        std::vector<pid_t> pids;
        HelperIdentity identity;  // the worker's user
    };
    using Done = std::function<void(Result<CudaCheckpointAnswer>)>;

    explicit WorkerGpuRelease(boost::asio::io_context& io);
    ~WorkerGpuRelease();
    WorkerGpuRelease(const WorkerGpuRelease&) = delete;
    WorkerGpuRelease& operator=(const WorkerGpuRelease&) = delete;

    void release(Request request, Done done);
    void restore(Request request, Done done);
    void cancel();

  private:
    void run(CudaCheckpointAction action, Request request, Done done);

    boost::asio::io_context& io_;
    Done done_;
    uint64_t generation_ = 0;  // tells the live operation's answer from a cancelled one's
    std::unique_ptr<BackgroundWork> background_;  // created at the first operation
};

// Why the GPU memory a worker holds (`gpu_bytes`) must not be moved into
// host memory now; "" when it may. The copy lands in the worker's host
// memory, charged to its cgroup, before the freeze and the reclaim push it
// out: the host must have it available with a tenth of MemTotal to spare
// (the reserve a restart keeps, supervise/restart_room.h), and the worker
// must have it under its memory.max, or the release would make the host
// emergency or the OOM kill the suspension is meant to avoid. Unknown
// figures do not refuse.
std::string gpu_release_refusal(uint64_t gpu_bytes, const MemInfo& host,
                                std::optional<uint64_t> memory_max,
                                std::optional<uint64_t> memory_current);

// The helper's request for `action` (exposed for tests).
HelperRequest cuda_checkpoint_helper_request(CudaCheckpointAction action,
                                             const WorkerGpuRelease::Request& request);

// A helper's result read as an answer: a helper that did not exit 0 or 1,
// or whose output is not an answer, is an error that says so.
Result<CudaCheckpointAnswer> read_cuda_checkpoint_result(const HelperResult& result,
                                                         const HelperRequest& request);

}  // namespace infervisor
