#include "supervise/worker_gpu_release.h"

#include <boost/asio/post.hpp>
#include <utility>

#include "base/units.h"

namespace infervisor {

WorkerGpuRelease::WorkerGpuRelease(boost::asio::io_context& io) : io_(io) {}

WorkerGpuRelease::~WorkerGpuRelease() { cancel(); }

void WorkerGpuRelease::cancel() {
    ++generation_;
    done_ = {};
}

void WorkerGpuRelease::release(Request request, Done done) {
    run(CudaCheckpointAction::release, std::move(request), std::move(done));
}

void WorkerGpuRelease::restore(Request request, Done done) {
    run(CudaCheckpointAction::restore, std::move(request), std::move(done));
}

std::string gpu_release_refusal(uint64_t gpu_bytes, const MemInfo& host,
                                std::optional<uint64_t> memory_max,
                                std::optional<uint64_t> memory_current) {
    if (host.mem_total && host.mem_available) {
        uint64_t wanted = gpu_bytes + *host.mem_total / 10;
        if (*host.mem_available < wanted)
            return human_size(gpu_bytes) + " of GPU memory would not fit in host memory (" +
                   human_size(*host.mem_available) + " available, " + human_size(wanted) +
                   " wanted with a tenth of the host's to spare)";
    }
    if (memory_max) {
        uint64_t used = memory_current.value_or(0);
        uint64_t room = *memory_max > used ? *memory_max - used : 0;
        if (room < gpu_bytes)
            return human_size(gpu_bytes) + " of GPU memory would not fit under its memory.max (" +
                   human_size(*memory_max) + ", " + human_size(used) + " used)";
    }
    return {};
}

HelperRequest cuda_checkpoint_helper_request(CudaCheckpointAction action,
                                             const WorkerGpuRelease::Request& request) {
    HelperRequest helper;
    auto lock_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(WorkerGpuRelease::kLockTimeout);
    helper.argv = {request.program,
                   kHelperModeFlag,
                   kCudaCheckpointHelper,
                   request.library,
                   cuda_checkpoint_action_name(action),
                   std::to_string(lock_ms.count())};
    for (pid_t pid : request.pids) helper.argv.push_back(std::to_string(pid));
    // libcuda finds the driver's files itself; a locale-free, minimal
    // environment, as for every helper.
    helper.environment = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"};
    helper.identity = request.identity;
    // libcuda maps far more address space than it touches (the GPU's
    // virtual address range): no RLIMIT_AS, which would fail cuInit.
    helper.memory_limit = 0;
    helper.deadline = WorkerGpuRelease::kLockTimeout + WorkerGpuRelease::kCopyAllowance;
    helper.max_output = 64 * 1024;
    return helper;
}

Result<CudaCheckpointAnswer> read_cuda_checkpoint_result(const HelperResult& result,
                                                         const HelperRequest& request) {
    bool answered = result.outcome == HelperResult::Outcome::succeeded ||
                    (result.outcome == HelperResult::Outcome::failed && result.status &&
                     result.status->code == 1);
    if (!answered) return plain_error("the cuda-checkpoint helper " + result.describe(request));
    auto answer = parse_cuda_checkpoint_answer(result.output);
    if (!answer)
        return plain_error("the cuda-checkpoint helper's answer cannot be read: " +
                           answer.error().message());
    return answer;
}

void WorkerGpuRelease::run(CudaCheckpointAction action, Request request, Done done) {
    cancel();
    done_ = std::move(done);
    uint64_t generation = generation_;
    if (!background_) background_ = std::make_unique<BackgroundWork>(io_);
    HelperRequest helper = cuda_checkpoint_helper_request(action, request);
    background_->run<Result<CudaCheckpointAnswer>>(
        [helper] { return read_cuda_checkpoint_result(run_helper(helper), helper); },
        [this, generation](Result<CudaCheckpointAnswer> answer) {
            if (generation != generation_) return;
            if (auto finished = std::exchange(done_, {})) finished(std::move(answer));
        });
}

}  // namespace infervisor
