#include "process/helper_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <initializer_list>
#include <new>

#include "base/unique_fd.h"
#include "base/units.h"
#include "process/pidfd.h"
#include "process/spawn.h"

namespace infervisor {

namespace {

struct Pipe {
    UniqueFd read, write;
};

// Non-blocking on this process's end only: the helper's end is its stdio,
// and O_NONBLOCK belongs to the open file (a dup2 in the child shares it).
Result<Pipe> make_pipe(bool ours_is_read_end) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) < 0) return errno_error("create a helper pipe");
    Pipe pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
    int ours = ours_is_read_end ? fds[0] : fds[1];
    if (::fcntl(ours, F_SETFL, ::fcntl(ours, F_GETFL) | O_NONBLOCK) < 0)
        return errno_error("make a helper pipe non-blocking");
    return pipe;
}

// Reads what is there; false at EOF or on an error (the fd is then done).
bool drain(int fd, std::string& into, std::size_t keep, bool keep_tail) {
    char buffer[16384];
    for (;;) {
        ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n > 0) {
            into.append(buffer, static_cast<std::size_t>(n));
            if (keep_tail && into.size() > keep) into.erase(0, into.size() - keep);
            if (!keep_tail && into.size() > keep) return true;  // the caller sees the excess
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        return n < 0 && errno == EAGAIN;
    }
}

// Writes what the pipe takes; false once everything is written or the
// reader has gone (EPIPE: the helper need not read all of its input).
bool feed(int fd, const std::string& input, std::size_t& written) {
    while (written < input.size()) {
        ssize_t n = ::write(fd, input.data() + written, input.size() - written);
        if (n > 0) {
            written += static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        return n < 0 && errno == EAGAIN;
    }
    return false;
}

// A helper that stops reading its input must cost EPIPE, not this process's
// life: SIGPIPE is blocked in this thread (a write's SIGPIPE goes to the
// thread that wrote) and one that became pending is taken back.
class SigpipeBlock {
  public:
    SigpipeBlock() {
        sigset_t pipe;
        ::sigemptyset(&pipe);
        ::sigaddset(&pipe, SIGPIPE);
        ::pthread_sigmask(SIG_BLOCK, &pipe, &saved_);
    }
    ~SigpipeBlock() {
        sigset_t pipe;
        ::sigemptyset(&pipe);
        ::sigaddset(&pipe, SIGPIPE);
        timespec none{};
        while (::sigtimedwait(&pipe, nullptr, &none) == SIGPIPE) {
        }
        ::pthread_sigmask(SIG_SETMASK, &saved_, nullptr);
    }
    SigpipeBlock(const SigpipeBlock&) = delete;
    SigpipeBlock& operator=(const SigpipeBlock&) = delete;

  private:
    sigset_t saved_;
};

int remaining_ms(TimePoint deadline, bool has_deadline) {
    if (!has_deadline) return -1;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    return left.count() <= 0 ? 0 : static_cast<int>(left.count()) + 1;
}

SpawnRequest spawn_request_for(const HelperRequest& request, int in, int out, int err) {
    SpawnRequest spawn;
    spawn.argv = request.argv;
    spawn.environment = request.environment;
    if (request.identity) {
        spawn.uid = request.identity->uid;
        spawn.gid = request.identity->gid;
        spawn.supplementary_groups = request.identity->groups;
    }
    spawn.stdin_fd = in;
    spawn.stdout_fd = out;
    spawn.stderr_fd = err;
    spawn.oom_score_adj = request.oom_score_adj;
    spawn.address_space_limit = request.memory_limit;
    spawn.no_core_dump = true;
    return spawn;
}

}  // namespace

HelperResult run_helper(const HelperRequest& request) {
    HelperResult result;
    auto in = make_pipe(false);
    auto out = make_pipe(true);
    auto err = make_pipe(true);
    for (const auto* pipe : {&in, &out, &err})
        if (!*pipe) {
            result.what = pipe->error().message();
            return result;
        }
    auto spawned = spawn_process(
        spawn_request_for(request, in->read.get(), out->write.get(), err->write.get()));
    in->read.reset();
    out->write.reset();
    err->write.reset();
    if (!spawned) {
        result.what = spawned.error().message();
        return result;
    }
    const SigpipeBlock no_sigpipe;

    const bool has_deadline = request.deadline > Duration::zero();
    const TimePoint deadline = std::chrono::steady_clock::now() + request.deadline;
    std::size_t written = 0;
    bool writing = feed(in->write.get(), request.input, written);
    if (!writing) in->write.reset();
    bool reading_out = true, reading_err = true, killed = false;
    while (reading_out || reading_err) {
        pollfd fds[3] = {{writing ? in->write.get() : -1, POLLOUT, 0},
                         {reading_out ? out->read.get() : -1, POLLIN, 0},
                         {reading_err ? err->read.get() : -1, POLLIN, 0}};
        int ready = ::poll(fds, 3, remaining_ms(deadline, has_deadline));
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) {  // the deadline (or poll failing, which cannot wait either)
            result.outcome = HelperResult::Outcome::timed_out;
            killed = true;
            break;
        }
        if (writing && fds[0].revents) {
            writing = feed(in->write.get(), request.input, written);
            if (!writing) in->write.reset();
        }
        if (reading_out && fds[1].revents) {
            reading_out = drain(out->read.get(), result.output, request.max_output, false);
            if (result.output.size() > request.max_output) {
                result.outcome = HelperResult::Outcome::output_too_large;
                killed = true;
                break;
            }
        }
        if (reading_err && fds[2].revents)
            reading_err =
                drain(err->read.get(), result.diagnostics, HelperResult::kMaxDiagnostics, true);
    }
    // Both pipes at EOF: the helper has exited or closed them; it cannot
    // linger past the deadline either way.
    if (!killed && has_deadline) {
        while (true) {
            pollfd exit_fd{spawned->pidfd.get(), POLLIN, 0};
            int ready = ::poll(&exit_fd, 1, remaining_ms(deadline, true));
            if (ready < 0 && errno == EINTR) continue;
            if (ready <= 0) {
                result.outcome = HelperResult::Outcome::timed_out;
                killed = true;
            }
            break;
        }
    }
    if (killed) (void)send_signal(spawned->pidfd.get(), SIGKILL);
    auto status = wait_for_exit(spawned->pidfd.get());
    if (status) result.status = *status;
    if (killed) return result;
    if (!status) {
        result.outcome = HelperResult::Outcome::crashed;
        result.what = status.error().message();
    } else if (status->success()) {
        result.outcome = HelperResult::Outcome::succeeded;
    } else if (status->kind == ExitStatus::Kind::exited && status->code == kHelperExitOutOfMemory) {
        result.outcome = HelperResult::Outcome::out_of_memory;
    } else {
        result.outcome = status->kind == ExitStatus::Kind::exited ? HelperResult::Outcome::failed
                                                                  : HelperResult::Outcome::crashed;
    }
    return result;
}

std::string HelperResult::describe(const HelperRequest& request) const {
    std::string said;
    if (!diagnostics.empty()) {
        said = diagnostics;
        while (!said.empty() && (said.back() == '\n' || said.back() == ' ')) said.pop_back();
        said = ": " + said;
    }
    switch (outcome) {
        case Outcome::succeeded:
            return "succeeded";
        case Outcome::out_of_memory:
            return "ran out of memory (its limit is " +
                   format_size(ByteLimit(request.memory_limit)) + ")";
        case Outcome::timed_out:
            return "was killed after its deadline of " + format_duration(request.deadline);
        case Outcome::output_too_large:
            return "wrote more than " + std::to_string(request.max_output) + " bytes; killed";
        case Outcome::not_started:
            return "could not be started: " + what;
        case Outcome::failed:
        case Outcome::crashed:
            return (status ? status->describe() : what) + said;
    }
    return "?";
}

int run_helper_main(const std::function<int()>& body) {
    try {
        return body();
    } catch (const std::bad_alloc&) {
        std::fputs("out of memory\n", stderr);
        return kHelperExitOutOfMemory;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "internal error: %s\n", e.what());
        return 70;
    }
}

}  // namespace infervisor
