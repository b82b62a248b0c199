// ConfigLoadRunner: configuration is parsed and validated off the event
// loop, at most max_jobs at once, answered by a deadline (issue 10, defect 1).
#include "services/config_load_runner.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <optional>
#include <thread>

namespace infervisor {
namespace {

using Status = ConfigLoadRunner::Status;

struct Answer {
    Status status;
    std::optional<LoadedConfig> loaded;
};

// A job that waits until released, so a test decides when it ends.
struct HeldJob {
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    std::thread::id ran_on;

    ConfigLoadRunner::Job job() {
        return [this] {
            ran_on = std::this_thread::get_id();
            released.wait();
            return load_config_text("workers: []\n", "held.yaml");
        };
    }
};

// Runs the loop's handlers, waiting for the next one, until `done` holds.
// (The loop stops when the previous call's guard goes: restart it.)
void run_until(boost::asio::io_context& io, const std::function<bool()>& done) {
    io.restart();
    auto guard = boost::asio::make_work_guard(io);
    while (!done()) io.run_one();
}

TEST(ConfigLoadRunner, RunsTheJobOffTheLoopAndAnswersOnIt) {
    boost::asio::io_context io;
    ConfigLoadRunner runner(io, 1, Duration::zero());
    std::optional<Answer> answer;
    std::thread::id job_thread, answer_thread;
    ASSERT_TRUE(runner.run(
        [&] {
            job_thread = std::this_thread::get_id();
            return load_config_text("bad: [", "t.yaml");
        },
        [&](Status s, std::optional<LoadedConfig> l) {
            answer_thread = std::this_thread::get_id();
            answer = Answer{s, std::move(l)};
        }));
    run_until(io, [&] { return answer.has_value(); });
    EXPECT_EQ(answer->status, Status::done);
    EXPECT_FALSE(answer->loaded->ok());
    EXPECT_NE(job_thread, std::this_thread::get_id());
    EXPECT_EQ(answer_thread, std::this_thread::get_id());
    EXPECT_EQ(runner.running(), 0u);
}

TEST(ConfigLoadRunner, RefusesAtOnceWhenAllSlotsAreBusy) {
    boost::asio::io_context io;
    ConfigLoadRunner runner(io, 2, Duration::zero());
    HeldJob a, b;
    int answers = 0;
    auto count = [&](Status, std::optional<LoadedConfig>) { ++answers; };
    EXPECT_TRUE(runner.run(a.job(), count));
    EXPECT_TRUE(runner.run(b.job(), count));
    EXPECT_FALSE(runner.run([] { return LoadedConfig{}; }, count));
    EXPECT_EQ(runner.running(), 2u);
    a.release.set_value();
    run_until(io, [&] { return answers == 1; });
    EXPECT_EQ(runner.running(), 1u);
    EXPECT_TRUE(runner.run([] { return LoadedConfig{}; }, count));  // a slot is free again
    b.release.set_value();
    run_until(io, [&] { return answers == 3; });
    EXPECT_EQ(runner.running(), 0u);
}

TEST(ConfigLoadRunner, AJobPastTheDeadlineIsAnsweredButKeepsItsSlotUntilItEnds) {
    boost::asio::io_context io;
    ConfigLoadRunner runner(io, 1, std::chrono::milliseconds(20));
    HeldJob slow;
    std::vector<Status> answers;
    ASSERT_TRUE(runner.run(slow.job(), [&](Status s, std::optional<LoadedConfig> l) {
        answers.push_back(s);
        EXPECT_FALSE(l.has_value());
    }));
    run_until(io, [&] { return !answers.empty(); });
    EXPECT_EQ(answers, std::vector<Status>{Status::timed_out});
    // Still running on its thread: no second job may start beside it.
    EXPECT_EQ(runner.running(), 1u);
    EXPECT_FALSE(runner.run([] { return LoadedConfig{}; }, [](Status, auto) {}));
    slow.release.set_value();
    run_until(io, [&] { return runner.running() == 0; });
    EXPECT_EQ(answers.size(), 1u);  // answered once only
}

TEST(ConfigLoadRunner, JobsRunAtTheirNiceValueNotTheLoops) {
    boost::asio::io_context io;
    ConfigLoadRunner runner(io, 1, Duration::zero(), 10);
    int job_nice = -100;
    bool answered = false;
    errno = 0;
    int loop_nice = ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()));
    runner.run(
        [&] {
            job_nice = ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()));
            return LoadedConfig{};
        },
        [&](Status, std::optional<LoadedConfig>) { answered = true; });
    run_until(io, [&] { return answered; });
    EXPECT_GE(job_nice, 10);  // more if the test itself runs niced further
    EXPECT_EQ(::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid())), loop_nice);
}

TEST(ConfigLoadRunner, AThrowingJobIsAnAnswerWithAnError) {
    boost::asio::io_context io;
    ConfigLoadRunner runner(io, 1, Duration::zero());
    std::optional<Answer> answer;
    runner.run([]() -> LoadedConfig { throw std::bad_alloc(); },
               [&](Status s, std::optional<LoadedConfig> l) {
                   answer = Answer{s, std::move(l)};
               });
    run_until(io, [&] { return answer.has_value(); });
    EXPECT_EQ(answer->status, Status::done);
    EXPECT_NE(answer->loaded->errors.format().find("internal error while checking"),
              std::string::npos);
}

// The threads of this process (the entries of /proc/self/task).
std::size_t own_threads() {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& entry :
         std::filesystem::directory_iterator("/proc/self/task"))
        ++n;
    return n;
}

TEST(ConfigLoadRunner, HoldsNoThreadWhileIdle) {
    boost::asio::io_context io;
    // (An earlier test's job thread may still be ending: at most as many.)
    const std::size_t before = own_threads();
    ConfigLoadRunner runner(io, 4, Duration::zero());
    EXPECT_LE(own_threads(), before);  // none made in advance
    EXPECT_EQ(runner.threads(), 0u);
    HeldJob held;
    std::optional<Answer> answer;
    ASSERT_TRUE(runner.run(held.job(), [&](Status s, std::optional<LoadedConfig> l) {
        answer = Answer{s, std::move(l)};
    }));
    EXPECT_EQ(runner.threads(), 1u);  // one for the job
    held.release.set_value();
    run_until(io, [&] { return answer.has_value(); });
    // The job's thread ends with it (it may still be returning).
    while (runner.threads() != 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(answer->status, Status::done);
}

}  // namespace
}  // namespace infervisor
