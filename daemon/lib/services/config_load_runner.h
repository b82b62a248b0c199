// ConfigLoadRunner: parses and validates configuration off the event loop.
//
// Parsing and validating are bounded (config_limits.h: sizes, counts, linear
// steps), but even the bounded worst case is far too long for the event
// loop, which must answer workers' heartbeats and systemd's watchdog: the
// text of `infervisorctl config check` comes from any local user, and the
// daemon's own reload reads files of any size up to the limits.
//
// Contract: run(job, done) runs `job` on one of `max_jobs` background
// threads and then calls done(result) on the loop thread. At most `max_jobs`
// jobs run at once; run() refuses (returns false, calls nothing) when that
// many are running, so a caller over the limit learns it at once instead of
// queueing. With a deadline, done() gets kTimedOut when the job has not
// finished by then; the job still runs to its end on its thread (nothing can
// interrupt yaml-cpp or an NSS lookup) and holds its slot until it ends,
// which is what keeps a flood of slow jobs from piling up threads. done()
// is never called after the runner is destroyed; the destructor waits for
// the jobs that are running. A job must not touch loop-thread state.
//
// Threads: each job runs on a thread of its own, which ends with the job, so
// an idle daemon has none (a thread waiting for work would hold its stack's
// pages, locked under mlockall, for nothing). Their allocations come from
// the one malloc arena app/memory_lock.h sets up, whose free top is given
// back: a job's garbage does not stay.
#pragma once

#include <boost/asio/io_context.hpp>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include "base/clock.h"
#include "config/config_loader.h"

namespace infervisor {

class ConfigLoadRunner {
  public:
    enum class Status { done, timed_out };
    using Job = std::function<LoadedConfig()>;
    // `loaded` is empty when status is timed_out.
    using Done = std::function<void(Status status, std::optional<LoadedConfig> loaded)>;

    // deadline: Duration::zero() for none. nice: the jobs' threads run at
    // this nice value (setpriority), so that on a busy host a check takes
    // its CPU from nobody but other background work, never from the loop.
    ConfigLoadRunner(boost::asio::io_context& io, std::size_t max_jobs, Duration deadline,
                     int nice = 0);
    ~ConfigLoadRunner();
    ConfigLoadRunner(const ConfigLoadRunner&) = delete;
    ConfigLoadRunner& operator=(const ConfigLoadRunner&) = delete;

    bool run(Job job, Done done);

    std::size_t running() const { return *running_; }
    std::size_t max_jobs() const { return max_jobs_; }
    // The jobs' threads that exist now (a timed-out job's among them).
    std::size_t threads() const {
        std::lock_guard lock(threads_->mutex);
        return threads_->live;
    }
    Duration deadline() const { return deadline_; }

  private:
    struct Call;

    boost::asio::io_context& io_;
    std::size_t max_jobs_;
    Duration deadline_;
    int nice_;
    // Shared with the jobs' completions, which may outlive nothing but the
    // loop: a completion that finds `alive` expired does nothing.
    std::shared_ptr<std::size_t> running_ = std::make_shared<std::size_t>(0);
    // The jobs' threads, counted so that the destructor can wait for them:
    // a thread holds this until its job has ended and its answer is posted.
    struct Threads {
        std::mutex mutex;
        std::condition_variable ended;
        std::size_t live = 0;  // guarded by mutex
    };
    std::shared_ptr<Threads> threads_ = std::make_shared<Threads>();
};

}  // namespace infervisor
