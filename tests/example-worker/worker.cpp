#include "worker.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "checkpoint.h"

namespace example_worker {

namespace {

volatile sig_atomic_t stop_requested = 0;
volatile sig_atomic_t checkpoint_requested = 0;
volatile sig_atomic_t burst_requested = 0;
volatile sig_atomic_t release_requested = 0;
std::atomic<unsigned long> spin_counter{0};

void on_stop(int) { stop_requested = 1; }
void on_checkpoint(int) { checkpoint_requested = 1; }
void on_burst(int) { burst_requested = 1; }
void on_release(int) { release_requested = 1; }

long long monotonic_ns() {
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    return static_cast<long long>(now.tv_sec) * 1000000000LL + now.tv_nsec;
}

// One line per write(2), so that a line written before a kill is whole.
void stamp(int fd, const char* what) {
    if (fd < 0) return;
    char line[64];
    int n = std::snprintf(line, sizeof line, "%s %lld\n", what, monotonic_ns());
    if (::write(fd, line, static_cast<size_t>(n)) != n) {
        // Nothing to do: the benchmark reading it notices the missing line.
    }
}

constexpr std::chrono::milliseconds kLeakStep{100};
// The most of the leak's time one step makes up for. A loop that runs late
// (a slow or loaded host) still holds the rate; a worker that was frozen
// (cgroup.freeze, SIGSTOP) goes on leaking where it stopped, as a leak that
// grows with the work done does, instead of allocating the whole time it was
// frozen at once.
constexpr std::chrono::seconds kLeakMostCatchUp{1};

// $WATCHDOG_USEC, unless $WATCHDOG_PID says it is meant for another process.
std::optional<std::chrono::microseconds> watchdog_from_environment() {
    const char* usec = std::getenv("WATCHDOG_USEC");
    if (!usec || !*usec) return std::nullopt;
    const char* for_pid = std::getenv("WATCHDOG_PID");
    if (for_pid && *for_pid && std::atol(for_pid) != ::getpid()) return std::nullopt;
    long long value = std::atoll(usec);
    if (value <= 0) return std::nullopt;
    return std::chrono::microseconds(value / 2);
}

}  // namespace

Worker::Worker(Options options)
    : options_(std::move(options)),
      notifier_(std::getenv("NOTIFY_SOCKET")),
      start_(Clock::now()),
      watchdog_interval_(options_.heartbeat_ms && *options_.heartbeat_ms > 0
                             ? std::chrono::microseconds(*options_.heartbeat_ms * 1000)
                             : watchdog_from_environment()) {}

void Worker::say(const char* format, ...) {
    std::printf("%s: ", options_.name.c_str());
    va_list args;
    va_start(args, format);
    std::vprintf(format, args);
    va_end(args);
    std::putchar('\n');
    std::fflush(stdout);
}

// SIGTERM and the checkpoint signal stay blocked except while sleeping in
// ppoll, so a signal can never slip in between checking a flag and sleeping.
void Worker::install_signal_handlers() {
    struct sigaction action = {};
    sigemptyset(&action.sa_mask);
    action.sa_handler = on_checkpoint;
    sigaction(options_.checkpoint_signal, &action, nullptr);
    action.sa_handler = options_.ignore_sigterm ? SIG_IGN : on_stop;
    sigaction(SIGTERM, &action, nullptr);
    sigset_t blocked;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGTERM);
    sigaddset(&blocked, options_.checkpoint_signal);
    if (options_.burst_mb > 0) {
        action.sa_handler = on_burst;
        sigaction(SIGUSR2, &action, nullptr);
        sigaddset(&blocked, SIGUSR2);
        action.sa_handler = on_release;
        sigaction(SIGHUP, &action, nullptr);
        sigaddset(&blocked, SIGHUP);
    }
    sigprocmask(SIG_BLOCK, &blocked, nullptr);
}

void Worker::restore_if_asked() {
    const char* from = std::getenv("INFERVISOR_RESTORE_FROM");
    if (!from || !*from) return;
    RestoredCheckpoint restored = read_checkpoint(from);
    if (!restored.ok) {
        say("resumed from %s (checkpoint unusable: %s; starting from 0)", from,
            restored.detail.c_str());
        return;
    }
    served_ = restored.served;
    say("resumed from %s (served %ld requests before)", from, served_);
}

// A grandchild in its own session whose parent exits at once: it is reparented
// away from the worker, so only the cgroup still knows it belongs here.
void Worker::leave_orphan() {
    std::fflush(stdout);
    pid_t middle = ::fork();
    if (middle < 0) {
        say("fork failed: %s", std::strerror(errno));
        return;
    }
    if (middle == 0) {
        ::setsid();
        if (::fork() != 0) ::_exit(0);
        ::signal(SIGTERM, SIG_IGN);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, nullptr);
        say("orphan grandchild pid %d (detached, ignores SIGTERM)", static_cast<int>(::getpid()));
        for (;;) ::pause();
    }
    ::waitpid(middle, nullptr, 0);
}

bool Worker::create_tmp_file() {
    if (options_.tmp_file.front() == '/') {
        tmp_path_ = options_.tmp_file;
    } else {
        const char* dir = std::getenv("TMPDIR");
        tmp_path_ = std::string(dir && *dir ? dir : "/tmp") + "/" + options_.tmp_file;
    }
    FILE* file = std::fopen(tmp_path_.c_str(), "we");
    if (!file) {
        std::fprintf(stderr, "%s: error: cannot create model file %s: %s\n", options_.name.c_str(),
                     tmp_path_.c_str(), std::strerror(errno));
        return false;
    }
    std::fprintf(file, "fake model weights of %s\n", options_.name.c_str());
    std::fclose(file);
    say("wrote model file %s", tmp_path_.c_str());
    return options_.hold_tmp_file.empty() || hold_tmp_file();
}

// Held until the process ends: the descriptor (never closed) or the mapping
// (never unmapped), as a server holds its weights.
bool Worker::hold_tmp_file() {
    int fd = ::open(tmp_path_.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) < 0) {
        std::fprintf(stderr, "%s: error: cannot open model file %s: %s\n", options_.name.c_str(),
                     tmp_path_.c_str(), std::strerror(errno));
        return false;
    }
    if (options_.hold_tmp_file == "open") {
        say("holding model file %s open (fd %d)", tmp_path_.c_str(), fd);
        return true;
    }
    void* map = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    if (map == MAP_FAILED) {
        std::fprintf(stderr, "%s: error: cannot map model file %s: %s\n", options_.name.c_str(),
                     tmp_path_.c_str(), std::strerror(errno));
        return false;
    }
    say("holding model file %s mapped", tmp_path_.c_str());
    return true;
}

bool Worker::tmp_file_still_there() {
    int fd = ::open(tmp_path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        std::fprintf(stderr, "%s: error: model file %s vanished: %s\n", options_.name.c_str(),
                     tmp_path_.c_str(), std::strerror(errno));
        return false;
    }
    char buffer[256];
    while (::read(fd, buffer, sizeof buffer) > 0) {
    }
    ::close(fd);
    return true;
}

void Worker::become_ready() {
    model_.add(static_cast<size_t>(options_.model_mb) * kMiB);
    ready_ = true;
    notifier_.send("READY=1\nSTATUS=serving");
    say("ready (model %ld MiB, rss=%ld MiB)", options_.model_mb, rss_mib());
    auto now = Clock::now();
    next_serve_ = now + std::chrono::milliseconds(options_.serve_interval_ms);
    last_leak_ = now + std::chrono::milliseconds(options_.leak_after_ms);
    next_leak_ = last_leak_ + kLeakStep;
    next_leak_report_ = now + std::chrono::seconds(1);
}

bool Worker::serve_one() {
    if (!tmp_path_.empty() && !tmp_file_still_there()) return false;
    if (options_.touch_model) model_checksum_ += model_.touch() + burst_.touch();
    ++served_;
    say("served request %ld (rss=%ld MiB)", served_, rss_mib());
    notifier_.send("STATUS=served " + std::to_string(served_) + " requests");
    return true;
}

// Allocates what the rate owes for the time it has leaked, so the rate holds
// even when the loop runs late; a step makes up for kLeakMostCatchUp at most.
void Worker::leak_some(Clock::time_point now) {
    leaking_for_ += std::min<Clock::duration>(now - last_leak_, kLeakMostCatchUp);
    last_leak_ = now;
    std::chrono::duration<double> elapsed = leaking_for_;
    auto owed = static_cast<size_t>(options_.leak_mb_per_s * kMiB * elapsed.count());
    const auto most = static_cast<size_t>(options_.leak_max_mb) * kMiB;
    bool done = false;
    if (options_.leak_max_mb > 0 && owed >= most) {
        owed = most;
        done = true;
    }
    if (owed > leak_.total_bytes()) leak_.add(owed - leak_.total_bytes());
    if (done && !leak_done_) {
        leak_done_ = true;
        say("leak done: %zu MiB (rss=%ld MiB)", leak_.total_bytes() / kMiB, rss_mib());
        return;
    }
    if (leak_done_) return;
    if (now >= next_leak_report_) {
        say("leaked %zu MiB so far (rss=%ld MiB)", leak_.total_bytes() / kMiB, rss_mib());
        next_leak_report_ = std::max(next_leak_report_ + std::chrono::seconds(1), now);
    }
}

// The stamp file is opened before the first stamp, so that opening it does
// not delay the allocation that crosses the threshold.
void Worker::burst() {
    int fd = -1;
    if (!options_.burst_stamp.empty()) {
        std::string path = options_.burst_stamp;
        const char* workdir = std::getenv("INFERVISOR_WORKDIR");
        if (path.front() != '/' && workdir && *workdir) path = std::string(workdir) + "/" + path;
        fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) say("cannot write burst stamp %s: %s", path.c_str(), std::strerror(errno));
    }
    stamp(fd, "start");
    burst_.add(static_cast<size_t>(options_.burst_mb) * kMiB);
    stamp(fd, "end");
    if (fd >= 0) ::close(fd);
    say("burst of %ld MiB (rss=%ld MiB)", options_.burst_mb, rss_mib());
}

void Worker::checkpoint() {
    const char* dir = std::getenv("INFERVISOR_CHECKPOINT_DIR");
    if (!dir || !*dir) {
        say("checkpoint requested but INFERVISOR_CHECKPOINT_DIR is not set");
        return;
    }
    CheckpointOutcome outcome = write_checkpoint(dir, options_.name, served_);
    if (!outcome.ok) {
        say("checkpoint failed: %s", outcome.detail.c_str());
        return;
    }
    notifier_.send("CHECKPOINT=1");
    say("checkpoint written to %s (served %ld)", outcome.detail.c_str(), served_);
}

int Worker::stop() {
    notifier_.send("STOPPING=1");
    say("stopping");
    return 0;
}

void Worker::crash() {
    if (options_.abort) {
        say("aborting");
        std::abort();
    }
    say("crashing with exit code %d", options_.exit_code);
    std::exit(options_.exit_code);
}

// Stuck for good: no output, no heartbeats, no checkpoints. SIGTERM gets its
// default action back, as in a program that never handled it.
void Worker::spin() {
    say("spinning (no more heartbeats)");
    if (!options_.ignore_sigterm) ::signal(SIGTERM, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (;;) spin_counter.fetch_add(1, std::memory_order_relaxed);
}

Worker::Clock::time_point Worker::next_deadline() const {
    using std::chrono::milliseconds;
    auto deadline = Clock::time_point::max();
    if (!ready_) deadline = start_ + milliseconds(options_.load_ms);
    if (ready_) deadline = std::min(deadline, next_serve_);
    if (ready_ && options_.leak_mb_per_s > 0) deadline = std::min(deadline, next_leak_);
    if (watchdog_interval_) deadline = std::min(deadline, next_watchdog_);
    if (options_.crash_after_ms)
        deadline = std::min(deadline, start_ + milliseconds(*options_.crash_after_ms));
    if (options_.spin_after_ms)
        deadline = std::min(deadline, start_ + milliseconds(*options_.spin_after_ms));
    return deadline;
}

void Worker::sleep_until(Clock::time_point deadline) {
    auto now = Clock::now();
    auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::max(deadline - now, Clock::duration::zero()));
    timespec timeout{static_cast<time_t>(wait.count() / 1000000000),
                     static_cast<long>(wait.count() % 1000000000)};
    sigset_t unblocked;
    sigemptyset(&unblocked);
    pollfd listener{endpoint_.fd(), POLLIN, 0};
    const bool listening = endpoint_.fd() >= 0;
    int n = ::ppoll(listening ? &listener : nullptr, listening ? 1 : 0, &timeout, &unblocked);
    if (n > 0 && (listener.revents & POLLIN)) endpoint_.serve_pending(ready_);
}

int Worker::run() {
    install_signal_handlers();
    say("starting (pid %d)", static_cast<int>(::getpid()));
    restore_if_asked();
    if (options_.double_fork) leave_orphan();
    if (!options_.tmp_file.empty() && !create_tmp_file()) return 73;
    if (options_.http_port > 0) {
        std::string error;
        if (!endpoint_.open(options_.http_port, error)) {
            std::fprintf(stderr, "%s: error: %s\n", options_.name.c_str(), error.c_str());
            return 71;
        }
        say("health endpoint on http://127.0.0.1:%d/health", options_.http_port);
    }
    notifier_.send("STATUS=loading model");
    next_watchdog_ = start_;
    for (;;) {
        if (stop_requested) return stop();
        if (checkpoint_requested) {
            checkpoint_requested = 0;
            checkpoint();
        }
        if (burst_requested) {
            burst_requested = 0;
            burst();
        }
        if (release_requested) {
            release_requested = 0;
            burst_.clear();
            say("burst released (rss=%ld MiB)", rss_mib());
        }
        auto now = Clock::now();
        using std::chrono::milliseconds;
        if (options_.crash_after_ms && now >= start_ + milliseconds(*options_.crash_after_ms))
            crash();
        if (options_.spin_after_ms && now >= start_ + milliseconds(*options_.spin_after_ms)) spin();
        if (watchdog_interval_ && now >= next_watchdog_) {
            notifier_.send("WATCHDOG=1");
            next_watchdog_ = now + *watchdog_interval_;
        }
        if (!ready_ && now >= start_ + milliseconds(options_.load_ms)) become_ready();
        if (ready_ && now >= next_serve_) {
            if (!serve_one()) return 66;
            if (options_.exit_after_requests > 0 && served_ >= options_.exit_after_requests) {
                say("done after %ld requests", served_);
                return 0;
            }
            next_serve_ = std::max(next_serve_ + milliseconds(options_.serve_interval_ms), now);
        }
        if (ready_ && options_.leak_mb_per_s > 0 && now >= next_leak_) {
            leak_some(now);
            next_leak_ = std::max(next_leak_ + kLeakStep, now);
        }
        sleep_until(next_deadline());
    }
}

}  // namespace example_worker
