#include "probe/exec_probe.h"

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "base/units.h"
#include "process/pidfd.h"
#include "process/spawn.h"

namespace infervisor {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

constexpr int kMaxEmptyPolls = 3000;  // ~10 min at the capped poll step: a D-state process

class ExecProbe final : public ProbeAttempt, public std::enable_shared_from_this<ExecProbe> {
  public:
    ExecProbe(asio::io_context& io, ExecProbeSetup setup, ProbeDone done)
        : io_(io), setup_(std::move(setup)), timer_(io), done_(std::move(done)) {}

    void start(Duration timeout) {
        auto spawned = prepare_and_spawn();
        if (!spawned) {
            auto self = shared_from_this();
            std::string why = spawned.error().message();
            asio::post(io_, [self, why] { self->wind_up(false, "could not run: " + why); });
            return;
        }
        pidfd_ = std::make_unique<asio::posix::stream_descriptor>(io_, spawned->pidfd.release());
        pidfd_->async_wait(asio::posix::stream_descriptor::wait_read,
                           [self = shared_from_this()](const error_code& ec) {
                               if (!ec) self->on_exit();
                           });
        timer_.expires_after(timeout);
        timer_.async_wait([self = shared_from_this(), timeout](const error_code& ec) {
            if (ec || self->exited_) return;
            self->timed_out_ = "no exit within " + format_duration(timeout) + "; killed";
            (void)self->setup_.cgroup.kill();
        });
    }

    void cancel() override {
        done_ = nullptr;
        // The timers stay: on_exit still reaps, and the clean-up still
        // empties and removes the cgroup.
        if (pidfd_ && !exited_) (void)setup_.cgroup.kill();
    }

  private:
    Result<SpawnedProcess> prepare_and_spawn() {
        const CgroupDir& dir = setup_.cgroup;
        // A frozen worker's cgroup freezes a new process before its execve,
        // and spawn_process waits on this thread for that execve: never
        // spawn into one (the loop would wait until the thaw).
        if (CgroupDir(dir.path().parent_path()).freeze_requested().value_or(false))
            return plain_error("the worker is frozen");
        if (dir.exists()) {
            // A leftover of a daemon that died mid-attempt: empty it first.
            auto populated = dir.populated();
            if (populated && *populated) (void)dir.kill();
            if (auto r = dir.remove(); !r)
                return Error{r.error().code, "remove the leftover " + dir.path().string()};
        }
        if (auto r = dir.create(); !r) return r.error();
        auto fd = dir.open_dir();
        if (!fd) {
            (void)dir.remove();
            return fd.error();
        }
        SpawnRequest request = setup_.request;
        request.cgroup_fd = fd->get();
        request.stdin_fd = request.stdout_fd = request.stderr_fd = -1;
        auto spawned = spawn_process(request);
        if (!spawned) (void)dir.remove();
        return spawned;
    }

    void on_exit() {
        auto status = reap(pidfd_->native_handle());
        if (status && !*status) {  // not yet reapable: wait again
            pidfd_->async_wait(asio::posix::stream_descriptor::wait_read,
                               [self = shared_from_this()](const error_code& ec) {
                                   if (!ec) self->on_exit();
                               });
            return;
        }
        exited_ = true;
        timer_.cancel();
        pidfd_.reset();
        std::string detail = status ? (*status)->describe() : status.error().message();
        bool passed = status && (*status)->success() && timed_out_.empty();
        if (!timed_out_.empty()) detail = timed_out_;
        // Whatever it forked goes with it.
        auto populated = setup_.cgroup.populated();
        if (populated && *populated) (void)setup_.cgroup.kill();
        after_empty(passed, std::move(detail), 0);
    }

    void after_empty(bool passed, std::string detail, int polls) {
        auto populated = setup_.cgroup.populated();
        if (!populated || !*populated || polls >= kMaxEmptyPolls) {
            if (auto r = setup_.cgroup.remove(); !r && polls < kMaxEmptyPolls)
                detail += " (" + r.error().message() + ")";
            return wind_up(passed, std::move(detail));
        }
        if (polls % 50 == 49) (void)setup_.cgroup.kill();
        timer_.expires_after(std::chrono::milliseconds(std::min(5 * (polls + 1), 200)));
        timer_.async_wait([self = shared_from_this(), passed, detail = std::move(detail),
                           polls](const error_code& ec) mutable {
            if (!ec) self->after_empty(passed, std::move(detail), polls + 1);
        });
    }

    void wind_up(bool passed, std::string detail) {
        if (!done_) return;
        auto done = std::move(done_);
        done_ = nullptr;
        done(ProbeOutcome{passed, std::move(detail), std::nullopt});
    }

    asio::io_context& io_;
    ExecProbeSetup setup_;
    asio::steady_timer timer_;
    ProbeDone done_;
    std::unique_ptr<asio::posix::stream_descriptor> pidfd_;
    bool exited_ = false;
    std::string timed_out_;
};

}  // namespace

std::shared_ptr<ProbeAttempt> start_exec_probe(asio::io_context& io, ExecProbeSetup setup,
                                               Duration timeout, ProbeDone done) {
    auto probe = std::make_shared<ExecProbe>(io, std::move(setup), std::move(done));
    probe->start(timeout);
    return probe;
}

}  // namespace infervisor
