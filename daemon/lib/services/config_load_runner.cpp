#include "services/config_load_runner.h"

#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <exception>
#include <system_error>
#include <thread>

namespace infervisor {

namespace asio = boost::asio;

// One job's completion, shared by the deadline timer and the job: whichever
// comes first calls `done`.
struct ConfigLoadRunner::Call {
    Call(asio::io_context& io, Done d) : timer(io), done(std::move(d)) {}
    asio::steady_timer timer;
    Done done;
    bool answered = false;

    void answer(Status status, std::optional<LoadedConfig> loaded) {
        if (answered) return;
        answered = true;
        timer.cancel();
        done(status, std::move(loaded));
    }
};

ConfigLoadRunner::ConfigLoadRunner(asio::io_context& io, std::size_t max_jobs, Duration deadline,
                                   int nice)
    : io_(io), max_jobs_(max_jobs), deadline_(deadline), nice_(nice) {}

ConfigLoadRunner::~ConfigLoadRunner() {
    running_.reset();  // completions posted from now on find it gone
    std::unique_lock lock(threads_->mutex);
    threads_->ended.wait(lock, [this] { return threads_->live == 0; });
}

bool ConfigLoadRunner::run(Job job, Done done) {
    if (*running_ >= max_jobs_) return false;
    auto call = std::make_shared<Call>(io_, std::move(done));
    std::weak_ptr<std::size_t> alive = running_;
    std::function<void()> body = [&io = io_, nice = nice_, alive, call,
                                  job = std::move(job)]() mutable {
        // Per thread on Linux; failing to lower it is no reason to refuse.
        if (nice != 0) (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), nice);
        auto loaded = std::make_shared<LoadedConfig>();
        try {
            *loaded = job();
        } catch (const std::exception& e) {  // std::bad_alloc, a bug: an answer all the same
            loaded->errors.add_unplaced(std::string("internal error while checking: ") + e.what());
        }
        job = nullptr;  // what it holds (a text to check) is garbage now, too
        // Give the job's garbage back to the system where the allocator can
        // (under mlockall only the heap's free top goes; see memory_lock.h).
        ::malloc_trim(0);
        // `call` moves on to the loop: its timer and `done` are only ever
        // touched, and destroyed, there.
        asio::post(io, [alive, call = std::move(call), loaded] {
            auto running = alive.lock();
            if (!running) return;
            --*running;
            call->answer(Status::done, std::move(*loaded));
        });
    };
    {
        std::lock_guard lock(threads_->mutex);
        ++threads_->live;
    }
    try {
        // Detached: the destructor waits on `live`, not on the thread, and
        // after the count drops the thread touches nothing of this runner.
        std::thread([threads = threads_, body = std::move(body)]() mutable {
            body();
            body = nullptr;
            {
                std::lock_guard lock(threads->mutex);
                --threads->live;
            }
            threads->ended.notify_all();
        }).detach();
    } catch (const std::system_error&) {  // no thread to be had (EAGAIN): as if busy
        std::lock_guard lock(threads_->mutex);
        --threads_->live;
        return false;
    }
    ++*running_;
    if (deadline_ > Duration::zero()) {
        call->timer.expires_after(deadline_);
        call->timer.async_wait([call, alive](const boost::system::error_code& ec) {
            if (ec || alive.expired()) return;
            call->answer(Status::timed_out, std::nullopt);
        });
    }
    return true;
}

}  // namespace infervisor
