// BackgroundWork: blocking file-system work (walking a model dir to measure
// it, deleting one) done off the event loop, which must never block.
//
// Contract: run(job, done) queues `job` for one background thread (jobs run
// one at a time, in order); its result is then posted to the io_context and
// `done(result)` runs on the loop thread — unless this BackgroundWork has been
// destroyed by then, in which case the result is dropped. A job must not
// touch loop-thread state: give it copies and its own descriptors. The
// destructor waits for the job that is running, not for queued ones. When
// no thread can be started, the job waits in the queue for the next run().
//
// The thread exists only while there is work: it is started by the run()
// that finds none, and ends when the queue is empty. Most of the time the
// daemon has nothing to measure or delete, and an idle thread still costs
// its stack's touched pages, locked in RAM (app/memory_lock.h), and a line
// in every `top -H`.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>

namespace infervisor {

class BackgroundWork {
  public:
    explicit BackgroundWork(boost::asio::io_context& io) : io_(io) {}
    ~BackgroundWork() {
        alive_.reset();
        {
            std::lock_guard lock(mutex_);
            queue_.clear();  // queued jobs are dropped; the running one ends
        }
        if (thread_.joinable()) thread_.join();
    }
    BackgroundWork(const BackgroundWork&) = delete;
    BackgroundWork& operator=(const BackgroundWork&) = delete;

    template <class T>
    void run(std::function<T()> job, std::function<void(T)> done) {
        std::weak_ptr<char> alive = alive_;
        enqueue([&io = io_, alive, job = std::move(job), done = std::move(done)] {
            auto result = std::make_shared<T>(job());
            boost::asio::post(io, [alive, result, done] {
                if (alive.lock()) done(std::move(*result));
            });
        });
    }

    // Whether the background thread exists now (for tests).
    bool thread_running() const {
        std::lock_guard lock(mutex_);
        return working_;
    }

  private:
    void enqueue(std::function<void()> task) {
        std::lock_guard lock(mutex_);
        queue_.push_back(std::move(task));
        if (working_) return;  // the running thread takes it
        // A thread that ended (working_ false) is joined before the next
        // starts; it has nothing left to do but return.
        if (thread_.joinable()) thread_.join();
        try {
            thread_ = std::thread([this] { drain(); });
            working_ = true;
        } catch (const std::system_error&) {
            // No thread to be had now (EAGAIN: the pids limit, say): the
            // task stays queued and the next run() starts the thread that
            // drains it. The loop must not die of it.
        }
    }

    void drain() {
        for (;;) {
            std::function<void()> task;
            {
                std::lock_guard lock(mutex_);
                if (queue_.empty()) {
                    working_ = false;
                    return;
                }
                task = std::move(queue_.front());
                queue_.pop_front();
            }
            task();
        }
    }

    boost::asio::io_context& io_;
    std::shared_ptr<char> alive_ = std::make_shared<char>();
    mutable std::mutex mutex_;
    std::deque<std::function<void()>> queue_;  // guarded by mutex_
    bool working_ = false;                     // guarded by mutex_: thread_ is draining
    std::thread thread_;                       // started and joined on the loop thread
};

}  // namespace infervisor
