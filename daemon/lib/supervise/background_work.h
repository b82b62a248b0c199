// BackgroundWork: blocking file-system work (walking a model dir to measure
// it, deleting one) done off the event loop, which must never block.
//
// Contract: run(job, done) queues `job` for one background thread (jobs run
// one at a time, in order); its result is then posted to the io_context and
// `done(result)` runs on the loop thread — unless this BackgroundWork has been
// destroyed by then, in which case the result is dropped. A job must not
// touch loop-thread state: give it copies and its own descriptors. The
// destructor waits for the job that is running, not for queued ones.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <functional>
#include <memory>

namespace infervisor {

class BackgroundWork {
  public:
    explicit BackgroundWork(boost::asio::io_context& io) : io_(io), pool_(1) {}
    ~BackgroundWork() {
        alive_.reset();
        pool_.stop();
        pool_.join();
    }
    BackgroundWork(const BackgroundWork&) = delete;
    BackgroundWork& operator=(const BackgroundWork&) = delete;

    template <class T>
    void run(std::function<T()> job, std::function<void(T)> done) {
        std::weak_ptr<char> alive = alive_;
        boost::asio::post(pool_, [&io = io_, alive, job = std::move(job), done = std::move(done)] {
            auto result = std::make_shared<T>(job());
            boost::asio::post(io, [alive, result, done] {
                if (alive.lock()) done(std::move(*result));
            });
        });
    }

  private:
    boost::asio::io_context& io_;
    std::shared_ptr<char> alive_ = std::make_shared<char>();
    boost::asio::thread_pool pool_;
};

}  // namespace infervisor
