// policy-reaction-probe: the observer half of the policy reaction benchmark
// (tests/vm/bench/policy-bench.sh). It watches a worker from outside the
// worker's cgroup, sets off its memory burst and notes when it dies.
//
//   policy-reaction-probe [--timeout-s S] PID
//
// Opens a pidfd for PID, sends it SIGUSR2 through the pidfd (the example
// worker's --burst-mb signal; the pidfd makes sure the signal and the watch
// are for the same process), then polls the pidfd until the process exits.
// Prints two lines on stdout, CLOCK_MONOTONIC in nanoseconds, comparable with
// the worker's --burst-stamp lines (same clock, same machine):
//   signalled NS
//   died NS
// Exit status: 0 when it died, 1 on a timeout (default 600 s: a hang guard),
// 2 on bad usage or when PID cannot be watched. Not a test: it asserts
// nothing, the script around it reports figures.
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

long long monotonic_ns() {
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    return static_cast<long long>(now.tv_sec) * 1000000000LL + now.tv_nsec;
}

// Raw system calls: glibc 2.36's <sys/pidfd.h> lacks the extern "C" that C++
// needs to link its wrappers.
int pidfd_open(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

int pidfd_send_signal(int pidfd, int signal) {
    return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, signal, nullptr, 0));
}

[[noreturn]] void usage() {
    std::fprintf(stderr, "usage: policy-reaction-probe [--timeout-s S] PID\n");
    std::exit(2);
}

struct Args {
    pid_t pid = 0;
    int timeout_s = 600;
};

Args parse(int argc, char** argv) {
    Args a;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--timeout-s" && i + 1 < argc)
            a.timeout_s = std::atoi(argv[++i]);
        else if (a.pid == 0 && !arg.empty() && arg[0] != '-')
            a.pid = std::atoi(arg.c_str());
        else
            usage();
    }
    if (a.pid <= 0 || a.timeout_s <= 0) usage();
    return a;
}

// Waits for the pidfd to become readable (the process exited); false on timeout.
bool wait_for_exit(int pidfd, int timeout_s) {
    pollfd watch{pidfd, POLLIN, 0};
    for (;;) {
        int n = ::poll(&watch, 1, timeout_s * 1000);
        if (n > 0) return true;
        if (n == 0) return false;
        if (errno != EINTR) {
            std::fprintf(stderr, "policy-reaction-probe: poll: %s\n", std::strerror(errno));
            return false;
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    Args args = parse(argc, argv);
    int pidfd = pidfd_open(args.pid);
    if (pidfd < 0) {
        std::fprintf(stderr, "policy-reaction-probe: pidfd_open(%d): %s\n", args.pid,
                     std::strerror(errno));
        return 2;
    }
    long long signalled = monotonic_ns();
    if (pidfd_send_signal(pidfd, SIGUSR2) < 0) {
        std::fprintf(stderr, "policy-reaction-probe: pidfd_send_signal(%d): %s\n", args.pid,
                     std::strerror(errno));
        return 2;
    }
    bool died = wait_for_exit(pidfd, args.timeout_s);
    long long died_at = monotonic_ns();
    std::printf("signalled %lld\n", signalled);
    if (!died) {
        std::fprintf(stderr, "policy-reaction-probe: %d still alive after %d s\n", args.pid,
                     args.timeout_s);
        return 1;
    }
    std::printf("died %lld\n", died_at);
    return 0;
}
