// The GPU release of a suspension (`suspend: {gpu: release}`, the
// default): a real worker in a real cgroup, the real infervisord binary
// (INFERVISOR_DAEMON) in helper mode, and the stand-in libcuda
// (tests/unit/gpu/fake_cuda.cpp) copied into the test's directory, whose
// state file makes the worker's main process a CUDA process. The GPU
// reading is the context's nvidia_memory_of, answered here. Asserted: what
// the helper asked of the driver (the fake's call log), the process's CUDA
// state after suspend and resume, the journal's fields and words, and the
// cases where the release is not asked for (no GPU memory, `gpu: keep`, a
// suspension for memory, a copy that would not fit) or fails.
#include <gmock/gmock.h>

#include <cstdlib>
#include <filesystem>

#include "base/file_io.h"
#include "config/config_loader.h"
#include "supervise/worker_gpu_release.h"
#include "supervise/worker_suspension.h"
#include "supervisor_fixture.h"

namespace infervisor::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using K = EventKind;
using namespace std::chrono_literals;

constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kMiB512 = uint64_t{512} << 20;

class GpuRelease : public SupervisorFixture {
  protected:
    void SetUp() override {
        SupervisorFixture::SetUp();
        if (IsSkipped() || HasFatalFailure()) return;
        const char* daemon = std::getenv("INFERVISOR_DAEMON");
        const char* fake = std::getenv("INFERVISOR_FAKE_CUDA");
        if (!daemon || !fake) FAIL() << "INFERVISOR_DAEMON or INFERVISOR_FAKE_CUDA is not set";
        library_ = (dir_->path() / "libcuda.so.1").string();
        std::filesystem::copy_file(fake, library_);
        ctx_->paths.helper_program = daemon;
        ctx_->paths.cuda_library = library_;
        ctx_->nvidia_memory_of = [this](const std::string&) { return held_; };
    }

    Worker* start(WorkerSpec spec) {
        std::string name = spec.name;
        supervisor_->apply(config({spec}));
        run_until_event(name, K::ready);
        Worker* w = supervisor_->find(name);
        pid_ = w->main_pid();
        cuda_state("running");
        return w;
    }
    WorkerSpec worker(const std::string& name) const {
        auto spec = example(name, {});
        spec.notify = true;
        return spec;
    }
    // The worker's main process as the driver sees it, with `extra` lines.
    void cuda_state(const std::string& state, const std::string& extra = "") {
        dir_->write("libcuda.so.1.state", std::to_string(pid_) + " " + state + "\n" + extra);
    }
    std::string state_now() const { return read_file(library_ + ".state").value_or("?"); }
    std::string calls() const { return read_file(library_ + ".calls").value_or(""); }
    std::string pid_call(const std::string& call) const {
        return call + " " + std::to_string(pid_) + "\n";
    }

    std::string library_;
    // Small enough to fit in any test host's memory (the refusal's own test
    // is below).
    std::optional<uint64_t> held_ = kMiB512;
    pid_t pid_ = 0;
};

TEST_F(GpuRelease, ASuspendedCudaWorkerGivesItsGpuMemoryBackAndGetsItBackOnResume) {
    Worker* w = start(worker("llm"));
    std::optional<WorkerSuspension::Outcome> answer;
    ASSERT_TRUE(w->suspend("test", [&](const auto& o) { answer = o; }).ok());
    run_until_event("llm", K::suspended);
    ASSERT_TRUE(answer);
    EXPECT_TRUE(answer->ok) << answer->detail;
    // Locked (its CUDA calls finish), then checkpointed: the GPU is free.
    EXPECT_THAT(calls(), HasSubstr(pid_call("lock") + pid_call("checkpoint")));
    EXPECT_THAT(state_now(), HasSubstr(std::to_string(pid_) + " checkpointed"));
    const Event* suspended = last("llm", K::suspended);
    EXPECT_EQ(field(*suspended, "SUSPEND_METHOD"), "cuda-checkpoint");
    EXPECT_EQ(field(*suspended, "GPU_RELEASE"), "ok");
    EXPECT_EQ(field(*suspended, "GPU_MEMORY_BYTES"), std::to_string(kMiB512));
    EXPECT_NE(field(*suspended, "GPU_RELEASE_SECONDS"), "");
    EXPECT_THAT(suspended->message,
                HasSubstr("cuda-checkpoint: 512M of GPU memory moved to host memory"));
    EXPECT_TRUE(w->cgroup().frozen().value_or(false));

    std::optional<WorkerSuspension::Outcome> resumed;
    ASSERT_TRUE(w->resume("test", [&](const auto& o) { resumed = o; }).ok());
    run_until([&] { return resumed.has_value(); });
    EXPECT_TRUE(resumed->ok) << resumed->detail;
    EXPECT_EQ(resumed->detail, "resumed");
    EXPECT_THAT(calls(), HasSubstr(pid_call("restore") + pid_call("unlock")));
    EXPECT_THAT(state_now(), HasSubstr(std::to_string(pid_) + " running"));
    const Event* back = last("llm", K::resumed);
    ASSERT_NE(back, nullptr);
    EXPECT_EQ(field(*back, "GPU_RESTORE"), "ok");
    EXPECT_EQ(w->state(), WorkerState::running);
    EXPECT_EQ(w->main_pid(), pid_);
}

// A resume puts the released GPU memory back: while its card has no room
// (another process took it), the resume is refused, saying so, and the
// worker stays suspended with its memory safe in host memory; once the card
// has room it resumes.
TEST_F(GpuRelease, AResumeWaitsUntilItsCardHasRoomForWhatItReleased) {
    GpuDevice card;
    card.index = 0;
    card.vendor = "nvidia";
    card.pci_bus_id = "0000:03:00.0";
    card.memory_total = 80 * kGiB;
    card.memory_used = 80 * kGiB - 256 * (uint64_t{1} << 20);  // 256 MiB free
    ctx_->gpu_devices = [&card]() -> Result<std::vector<GpuDevice>> {
        return std::vector<GpuDevice>{card};
    };
    Worker* w = start(worker("llm"));
    w->set_gpu_use(kMiB512, 40.0, {{card.pci_bus_id, kMiB512}});
    ASSERT_TRUE(w->suspend("test").ok());
    run_until_event("llm", K::suspended);
    ASSERT_EQ(field(*last("llm", K::suspended), "GPU_RELEASE"), "ok");
    EXPECT_FALSE(w->gpu_room_to_resume().fits);
    auto refused = w->resume("test");
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().message(),
              "its GPU memory cannot go back yet: 256M of GPU memory free on 0000:03:00.0, less "
              "than the 512M it held; resume it once its cards have room");
    EXPECT_EQ(w->state(), WorkerState::suspended);
    EXPECT_THAT(calls(), Not(HasSubstr("restore ")));

    card.memory_used = 40 * kGiB;
    std::optional<WorkerSuspension::Outcome> resumed;
    ASSERT_TRUE(w->resume("test", [&](const auto& o) { resumed = o; }).ok());
    run_until([&] { return resumed.has_value(); });
    EXPECT_TRUE(resumed->ok) << resumed->detail;
    EXPECT_THAT(calls(), HasSubstr(pid_call("restore") + pid_call("unlock")));
    ctx_->gpu_devices = nullptr;
}

TEST_F(GpuRelease, AWorkerWithoutGpuMemoryOrWithGpuKeepIsAPlainFreeze) {
    held_ = 0;
    Worker* w = start(worker("cpu"));
    ASSERT_TRUE(w->suspend("test").ok());
    run_until_event("cpu", K::suspended);
    EXPECT_EQ(field(*last("cpu", K::suspended), "SUSPEND_METHOD"), "");
    ASSERT_TRUE(w->resume("test").ok());

    held_ = kMiB512;
    auto keep = worker("keep");
    keep.suspend.release_gpu = false;
    Worker* k = start(keep);
    ASSERT_TRUE(k->suspend("test").ok());
    run_until_event("keep", K::suspended);
    EXPECT_EQ(field(*last("keep", K::suspended), "SUSPEND_METHOD"), "");
    EXPECT_THAT(calls(), Not(HasSubstr("lock ")));
}

TEST_F(GpuRelease, ASuspensionForMemoryDoesNotMoveGpuMemoryIntoHostMemory) {
    Worker* w = start(worker("llm"));
    ASSERT_TRUE(w->suspend("rule 'host-low'", {}, /*for_memory=*/true).ok());
    run_until_event("llm", K::suspended);
    const Event* suspended = last("llm", K::suspended);
    EXPECT_EQ(field(*suspended, "GPU_RELEASE"), "skipped");
    EXPECT_THAT(field(*suspended, "GPU_RELEASE_SKIPPED"),
                HasSubstr("for memory: it would move its 512M of GPU memory into host memory"));
    EXPECT_THAT(calls(), Not(HasSubstr("lock ")));
}

TEST_F(GpuRelease, AFailedReleaseLeavesAPlainFreezeAndNothingToRestore) {
    Worker* w = start(worker("llm"));
    cuda_state("running", "fail checkpoint " + std::to_string(pid_) + " 2\n");
    std::optional<WorkerSuspension::Outcome> answer;
    ASSERT_TRUE(w->suspend("test", [&](const auto& o) { answer = o; }).ok());
    run_until_event("llm", K::suspended);
    EXPECT_TRUE(answer->ok) << "still suspended, as a plain freeze";
    const Event* suspended = last("llm", K::suspended);
    EXPECT_EQ(field(*suspended, "GPU_RELEASE"), "failed");
    EXPECT_THAT(field(*suspended, "GPU_RELEASE_ERROR"),
                HasSubstr("CUDA_ERROR_OUT_OF_MEMORY: out of memory; undone"));
    EXPECT_THAT(suspended->message, HasSubstr("cuda-checkpoint failed, a plain freeze instead"));
    EXPECT_THAT(state_now(), HasSubstr(std::to_string(pid_) + " running"));

    ASSERT_TRUE(w->resume("test").ok());
    run_until_event("llm", K::resumed);
    EXPECT_THAT(calls(), Not(HasSubstr(pid_call("restore"))));
    EXPECT_EQ(field(*last("llm", K::resumed), "GPU_RESTORE"), "");
}

TEST_F(GpuRelease, AFailedRestoreIsSaidWithWhatToDo) {
    Worker* w = start(worker("llm"));
    ASSERT_TRUE(w->suspend("test").ok());
    run_until_event("llm", K::suspended);
    ASSERT_EQ(field(*last("llm", K::suspended), "GPU_RELEASE"), "ok");
    cuda_state("checkpointed", "fail restore " + std::to_string(pid_) + " 2\n");
    std::optional<WorkerSuspension::Outcome> resumed;
    ASSERT_TRUE(w->resume("test", [&](const auto& o) { resumed = o; }).ok());
    run_until([&] { return resumed.has_value(); });
    EXPECT_THAT(resumed->detail, HasSubstr("resumed, but its GPU memory was not restored"));
    const Event* back = last("llm", K::resumed);
    EXPECT_EQ(field(*back, "GPU_RESTORE"), "failed");
    EXPECT_THAT(back->message, HasSubstr("its CUDA calls wait until it is"));
    // Suspended and resumed again: the restore is tried again.
    cuda_state("checkpointed");
    ASSERT_TRUE(w->suspend("again").ok());
    run_until_event("llm", K::suspended, 2);
    ASSERT_TRUE(w->resume("again").ok());
    run_until_event("llm", K::resumed, 2);
    EXPECT_THAT(state_now(), HasSubstr(std::to_string(pid_) + " running"));
}

// A daemon that adopts a worker whose GPU memory an earlier image released
// restores it at the resume, though it has no GPU reading yet: the state
// file says which step was taken.
TEST_F(GpuRelease, AnAdoptedReleaseIsRestoredAtTheResume) {
    dir_->write("etc/infervisor.yaml",
                std::string("workers:\n  - name: llm\n    command: [") +
                    std::getenv("INFERVISOR_EXAMPLE_WORKER") +
                    "]\n    user: root\n    notify: true\n    memory: {max: 1G}\n");
    auto loaded = load_config(ConfigSource{dir_->path() / "etc/infervisor.yaml"});
    ASSERT_TRUE(loaded.ok()) << loaded.errors.format();
    supervisor_->apply(loaded.config);
    run_until_event("llm", K::ready);
    Worker* w = supervisor_->find("llm");
    pid_ = w->main_pid();
    cuda_state("running");
    ASSERT_TRUE(w->suspend("infervisorctl").ok());
    run_until_event("llm", K::suspended);
    ASSERT_EQ(field(*last("llm", K::suspended), "GPU_RELEASE"), "ok");

    // The image ends without stopping anything; a new one adopts.
    supervisor_.reset();
    events_.clear();
    held_.reset();
    supervisor_ = std::make_unique<Supervisor>(*ctx_);
    supervisor_->adopt_leftovers(loaded.config);
    supervisor_->apply(loaded.config);
    w = supervisor_->find("llm");
    ASSERT_NE(w, nullptr);
    ASSERT_EQ(w->state(), WorkerState::suspended);
    ASSERT_TRUE(w->resume("infervisorctl").ok());
    run_until_event("llm", K::resumed);
    EXPECT_EQ(field(*last("llm", K::resumed), "GPU_RESTORE"), "ok");
    EXPECT_THAT(calls(), HasSubstr(pid_call("restore") + pid_call("unlock")));
    EXPECT_THAT(state_now(), HasSubstr(std::to_string(pid_) + " running"));
}

TEST(GpuReleaseRefusal, TheCopyMustFitInTheHostAndUnderTheWorkersMemoryMax) {
    MemInfo host;
    host.mem_total = 64 * kGiB;
    host.mem_available = 20 * kGiB;
    EXPECT_EQ(gpu_release_refusal(10 * kGiB, host, std::nullopt, std::nullopt), "");
    // 16 GiB + a tenth of 64 GiB > 20 GiB.
    EXPECT_THAT(gpu_release_refusal(16 * kGiB, host, std::nullopt, std::nullopt),
                HasSubstr("16G of GPU memory would not fit in host memory (20G "
                          "available, 22.4G wanted"));
    EXPECT_THAT(gpu_release_refusal(10 * kGiB, host, 12 * kGiB, 4 * kGiB),
                HasSubstr("would not fit under its memory.max (12G, 4G used)"));
    EXPECT_EQ(gpu_release_refusal(8 * kGiB, host, 12 * kGiB, 4 * kGiB), "");
    EXPECT_EQ(gpu_release_refusal(100 * kGiB, MemInfo{}, std::nullopt, std::nullopt), "")
        << "nothing known: nothing refuses";
}

TEST(GpuReleaseHelper, TheHelperIsAskedAsTheWorkersUserWithEveryPid) {
    WorkerGpuRelease::Request r{
        "/usr/sbin/infervisord", "libcuda.so.1", {41, 42}, {1000, 1000, {44}}};
    HelperRequest h = cuda_checkpoint_helper_request(CudaCheckpointAction::release, r);
    EXPECT_EQ(h.argv,
              (std::vector<std::string>{"/usr/sbin/infervisord", kHelperModeFlag, "cuda-checkpoint",
                                        "libcuda.so.1", "release", "10000", "41", "42"}));
    ASSERT_TRUE(h.identity);
    EXPECT_EQ(h.identity->uid, 1000u);
    EXPECT_EQ(h.identity->groups, std::vector<gid_t>{44});
}

}  // namespace
}  // namespace infervisor::testing
