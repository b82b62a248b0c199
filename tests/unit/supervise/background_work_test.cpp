// BackgroundWork: jobs in order, results on the loop thread, a thread only
// while there is work, nothing delivered after destruction.
#include "supervise/background_work.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

namespace infervisor {
namespace {

using namespace std::chrono_literals;

// Runs the loop until `done` holds (each poll runs what is ready).
template <class Pred>
void run_until(boost::asio::io_context& io, Pred done) {
    while (!done()) {
        io.restart();
        io.run_for(10ms);
    }
}

TEST(BackgroundWork, RunsJobsInOrderAndDeliversResultsOnTheLoopThread) {
    boost::asio::io_context io;
    BackgroundWork work(io);
    std::vector<int> results;
    std::vector<std::thread::id> job_threads;
    const auto loop_thread = std::this_thread::get_id();
    bool done_on_loop = true;
    for (int i = 0; i < 5; ++i)
        work.run<int>(
            [i, &job_threads] {
                job_threads.push_back(std::this_thread::get_id());
                return i;
            },
            [&](int r) {
                done_on_loop = done_on_loop && std::this_thread::get_id() == loop_thread;
                results.push_back(r);
            });
    run_until(io, [&] { return results.size() == 5; });
    EXPECT_EQ(results, (std::vector<int>{0, 1, 2, 3, 4}));
    EXPECT_TRUE(done_on_loop);
    for (auto id : job_threads) EXPECT_NE(id, loop_thread);
}

TEST(BackgroundWork, HasAThreadOnlyWhileThereIsWork) {
    boost::asio::io_context io;
    BackgroundWork work(io);
    EXPECT_FALSE(work.thread_running());
    std::promise<void> release;
    auto released = release.get_future().share();
    int got = 0;
    work.run<int>(
        [released] {
            released.wait();
            return 1;
        },
        [&](int r) { got += r; });
    EXPECT_TRUE(work.thread_running());
    release.set_value();
    run_until(io, [&] { return got == 1; });
    // The thread ends once the queue is empty (it may still be returning).
    while (work.thread_running()) std::this_thread::sleep_for(1ms);
    // The next job starts a thread again.
    work.run<int>([] { return 2; }, [&](int r) { got += r; });
    run_until(io, [&] { return got == 3; });
}

TEST(BackgroundWork, DestroyedWorkDeliversNothingAndDropsQueuedJobs) {
    boost::asio::io_context io;
    std::atomic<int> ran{0};
    int delivered = 0;
    std::promise<void> release, started;
    std::thread releaser;
    {
        BackgroundWork work(io);
        auto released = release.get_future().share();
        work.run<int>(
            [released, &ran, &started] {
                started.set_value();
                released.wait();
                ++ran;
                return 1;
            },
            [&](int) { ++delivered; });
        work.run<int>([&ran] { return ++ran; }, [&](int) { ++delivered; });
        started.get_future().wait();  // the first job runs, the second is queued
        // The destructor drops the queued job and waits for the running one.
        releaser = std::thread([&] {
            std::this_thread::sleep_for(20ms);
            release.set_value();
        });
    }
    releaser.join();
    EXPECT_EQ(ran.load(), 1);
    io.restart();
    io.poll();
    EXPECT_EQ(delivered, 0);
}

}  // namespace
}  // namespace infervisor
