// run_cuda_checkpoint against the stand-in libcuda (fake_cuda.cpp, its path
// in INFERVISOR_FAKE_CUDA): each test copies the library into its own
// directory, so that the state file beside it (the fake's format is at the
// top of fake_cuda.cpp) is its own. And the answer's text both ways.
#include "gpu/cuda_checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "base/file_io.h"
#include "support/temp_dir.h"

namespace infervisor {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class CudaCheckpointTest : public ::testing::Test {
  protected:
    void SetUp() override {
        const char* fake = std::getenv("INFERVISOR_FAKE_CUDA");
        if (!fake) FAIL() << "INFERVISOR_FAKE_CUDA is not set (tests/unit/meson.build sets it)";
        library_ = (dir_.path() / "libcuda.so.1").string();
        std::filesystem::copy_file(fake, library_);
    }
    void state(const std::string& text) { dir_.write("libcuda.so.1.state", text); }
    std::string state_now() const { return read_file(library_ + ".state").value_or("?"); }
    std::string calls() const { return read_file(library_ + ".calls").value_or(""); }
    CudaCheckpointAnswer run(CudaCheckpointAction action, std::vector<pid_t> pids) {
        return run_cuda_checkpoint(library_, action, pids, std::chrono::milliseconds(5000));
    }

    testing::TempDir dir_;
    std::string library_;
};

TEST_F(CudaCheckpointTest, AReleaseLocksEveryCudaProcessThenCheckpointsThem) {
    state("41 running\n42 running\n");
    // 43 is not a CUDA process: the driver does not know it.
    auto answer = run(CudaCheckpointAction::release, {41, 42, 43});
    EXPECT_TRUE(answer.ok) << answer.detail;
    EXPECT_EQ(answer.detail, "GPU memory of 2 CUDA processes moved to host memory");
    ASSERT_EQ(answer.processes.size(), 2u);
    EXPECT_EQ(answer.processes[0].after, CudaProcessState::checkpointed);
    EXPECT_EQ(answer.processes[1].after, CudaProcessState::checkpointed);
    // Every lock before any checkpoint: processes that share work are
    // stopped together.
    EXPECT_THAT(calls(), HasSubstr("lock 41\nlock 42\ncheckpoint 41\ncheckpoint 42\n"));
    EXPECT_THAT(state_now(), HasSubstr("41 checkpointed\n42 checkpointed\n"));
}

TEST_F(CudaCheckpointTest, ARestoreRestoresThenUnlocksAndLeavesRunningOnesAlone) {
    state("41 checkpointed\n42 locked\n44 running\n");
    auto answer = run(CudaCheckpointAction::restore, {41, 42, 44});
    EXPECT_TRUE(answer.ok) << answer.detail;
    EXPECT_EQ(answer.detail, "GPU memory of 2 CUDA processes restored");
    EXPECT_THAT(calls(), HasSubstr("restore 41\nunlock 41\n"));
    EXPECT_THAT(calls(), HasSubstr("unlock 42\n"));
    EXPECT_THAT(calls(), Not(HasSubstr("unlock 44")));
    EXPECT_THAT(state_now(), HasSubstr("41 running\n42 running\n44 running\n"));
}

TEST_F(CudaCheckpointTest, AFailedCheckpointIsUndoneAndTheProcessesRunOn) {
    state("41 running\n42 running\nfail checkpoint 42 2\n");
    auto answer = run(CudaCheckpointAction::release, {41, 42});
    EXPECT_FALSE(answer.ok);
    EXPECT_THAT(answer.detail,
                HasSubstr("process 42: cuCheckpointProcessCheckpoint: CUDA_ERROR_OUT_OF_MEMORY: "
                          "out of memory; undone, the processes run on"));
    // 41 was checkpointed: restored and unlocked; 42 only unlocked.
    EXPECT_THAT(calls(), HasSubstr("restore 41\nunlock 41\n"));
    EXPECT_THAT(calls(), HasSubstr("unlock 42\n"));
    EXPECT_THAT(state_now(), HasSubstr("41 running\n42 running\n"));
}

TEST_F(CudaCheckpointTest, AFailedLockUnlocksTheOnesLockedBefore) {
    state("41 running\n42 running\nfail lock 42 909\n");
    auto answer = run(CudaCheckpointAction::release, {41, 42});
    EXPECT_FALSE(answer.ok);
    EXPECT_THAT(answer.detail, HasSubstr("CUDA_ERROR_TIMEOUT: the lock timed out"));
    EXPECT_THAT(calls(), Not(HasSubstr("checkpoint ")));
    EXPECT_THAT(state_now(), HasSubstr("41 running\n42 running\n"));
}

TEST_F(CudaCheckpointTest, AProcessAlreadyCheckpointedCountsAsReleased) {
    state("41 checkpointed\n");
    auto answer = run(CudaCheckpointAction::release, {41});
    EXPECT_TRUE(answer.ok) << answer.detail;
    EXPECT_THAT(calls(), Not(HasSubstr("lock 41")));
}

TEST_F(CudaCheckpointTest, NoCudaProcessIsNotAReleaseAndAFailedOneIsNotTouched) {
    state("");
    auto none = run(CudaCheckpointAction::release, {41, 42});
    EXPECT_FALSE(none.ok);
    EXPECT_EQ(none.detail, "no CUDA process among its 2 processes");
    state("41 failed\n42 running\n");
    auto failed = run(CudaCheckpointAction::release, {41, 42});
    EXPECT_FALSE(failed.ok);
    EXPECT_EQ(failed.detail, "process 41 is failed: not released");
    EXPECT_THAT(calls(), Not(HasSubstr("lock ")));
}

TEST_F(CudaCheckpointTest, ALibraryThatCannotLoadOrInitSaysWhy) {
    auto missing =
        run_cuda_checkpoint((dir_.path() / "nope.so").string(), CudaCheckpointAction::release, {1},
                            std::chrono::milliseconds(1));
    EXPECT_FALSE(missing.ok);
    EXPECT_THAT(missing.detail, HasSubstr("cannot load "));
    state("init_fails 100\n");
    auto init = run(CudaCheckpointAction::release, {41});
    EXPECT_FALSE(init.ok);
    EXPECT_THAT(init.detail, HasSubstr("cuInit: CUresult 100"));
}

TEST(CudaCheckpointAnswerTest, TheAnswerReadsBackAsWritten) {
    CudaCheckpointAnswer answer{false, "process 42: it\nfailed", {}};
    answer.processes.push_back(
        {42, CudaProcessState::running, CudaProcessState::locked, "cuX: CUDA_ERROR_Y: z"});
    answer.processes.push_back({43, CudaProcessState::running, CudaProcessState::running, ""});
    auto text = format_cuda_checkpoint_answer(answer);
    auto back = parse_cuda_checkpoint_answer(text);
    ASSERT_TRUE(back.ok()) << back.error().message();
    EXPECT_FALSE(back->ok);
    EXPECT_EQ(back->detail, "process 42: it failed");
    ASSERT_EQ(back->processes.size(), 2u);
    EXPECT_EQ(back->processes[0].after, CudaProcessState::locked);
    EXPECT_EQ(back->processes[0].error, "cuX: CUDA_ERROR_Y: z");
    EXPECT_EQ(back->processes[1].error, "");
}

TEST(CudaCheckpointAnswerTest, ABadAnswerIsAnErrorNotAGuess) {
    EXPECT_FALSE(parse_cuda_checkpoint_answer("").ok());
    EXPECT_FALSE(parse_cuda_checkpoint_answer("result ok done").ok());  // cut off
    EXPECT_FALSE(parse_cuda_checkpoint_answer("result maybe x\n").ok());
    EXPECT_FALSE(parse_cuda_checkpoint_answer("pid 4 running running\n").ok());
    EXPECT_FALSE(parse_cuda_checkpoint_answer("result ok x\npid -4 running running\n").ok());
    EXPECT_FALSE(parse_cuda_checkpoint_answer("result ok x\npid 4 asleep running\n").ok());
    std::string many = "result ok x\n";
    for (int i = 1; i <= 300; ++i) many += "pid " + std::to_string(i) + " running running\n";
    auto r = parse_cuda_checkpoint_answer(many);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().message(), HasSubstr("more than 256 processes"));
}

}  // namespace
}  // namespace infervisor
