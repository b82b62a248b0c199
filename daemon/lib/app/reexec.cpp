#include "app/reexec.h"

#include <linux/close_range.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>
#include <vector>

#include "base/file_io.h"

extern char** environ;

namespace infervisor {

namespace {

struct Prepared {
    std::string exe;
    std::vector<std::string> args;
    std::vector<std::string> env;  // without kReexecEnv
    int count = 0;                 // quick re-executions before this image
    uint64_t first_usec = 0;       // of the first of them; 0: none
    // For the signal handler: built once, never touched again.
    std::vector<char*> argv;
    std::vector<char*> envp;
    std::string crash_entry;
    bool handlers_installed = false;
};

Prepared& prepared() {
    static Prepared p;
    return p;
}

// Nothing of this image's but stdin, stdout and stderr reaches the next one
// (a dup()ed descriptor has lost its close-on-exec flag). Async-signal-safe.
void close_on_exec_from_3() { ::syscall(SYS_close_range, 3u, ~0u, CLOSE_RANGE_CLOEXEC); }

uint64_t monotonic_usec() {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000u + static_cast<uint64_t>(ts.tv_nsec) / 1000u;
}

// The entry the next image gets: this re-execution counted.
std::string next_entry(const std::string& reason, uint64_t now) {
    const Prepared& p = prepared();
    bool quick = p.first_usec != 0 &&
                 now - p.first_usec < static_cast<uint64_t>(kQuickWindow.count()) * 1000000u;
    int count = quick ? p.count + 1 : 1;
    uint64_t first = quick ? p.first_usec : now;
    return std::string(kReexecEnv) + "=" + std::to_string(count) + ":" + std::to_string(first) +
           ":" + reason;
}

bool limit_reached(uint64_t now) {
    const Prepared& p = prepared();
    return p.first_usec != 0 &&
           now - p.first_usec < static_cast<uint64_t>(kQuickWindow.count()) * 1000000u &&
           p.count >= kMaxQuickReexecs;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
    std::vector<char*> out;
    for (auto& s : strings) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
}

void on_fatal_signal(int sig, siginfo_t* info, void*) {
    Prepared& p = prepared();
    // SIGABRT from someone else (systemd's watchdog) ends the daemon.
    bool own = sig != SIGABRT || info->si_code > 0 || info->si_pid == ::getpid();
    if (own) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, nullptr);  // the new image starts unblocked
        const char msg[] = "infervisord: fatal signal; re-executing in place\n";
        (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
        close_on_exec_from_3();
        ::execve(p.exe.c_str(), p.argv.data(), p.envp.data());
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

}  // namespace

ReexecOrigin reexec_origin() {
    ReexecOrigin o;
    const char* value = std::getenv(kReexecEnv);
    if (!value) return o;
    o.reexecuted = true;
    std::string_view v = value;
    size_t a = v.find(':');
    size_t b = a == std::string_view::npos ? a : v.find(':', a + 1);
    if (b == std::string_view::npos) return o;
    o.count = std::atoi(std::string(v.substr(0, a)).c_str());
    o.reason = std::string(v.substr(b + 1));
    return o;
}

void prepare_reexec() {
    Prepared& p = prepared();
    char exe[4096];
    ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        p.exe.assign(exe, static_cast<size_t>(n));
        // After an upgrade replaced the file, the link names the old inode.
        constexpr std::string_view kDeleted = " (deleted)";
        if (p.exe.size() > kDeleted.size() &&
            p.exe.compare(p.exe.size() - kDeleted.size(), kDeleted.size(), kDeleted) == 0)
            p.exe.resize(p.exe.size() - kDeleted.size());
    }
    if (auto cmdline = read_file("/proc/self/cmdline")) {
        std::string_view rest = *cmdline;
        while (!rest.empty()) {
            size_t end = rest.find('\0');
            p.args.emplace_back(rest.substr(0, end));
            rest = end == std::string_view::npos ? "" : rest.substr(end + 1);
        }
    }
    for (char** e = environ; e && *e; ++e)
        if (std::string_view(*e).rfind(std::string(kReexecEnv) + "=", 0) != 0)
            p.env.emplace_back(*e);
    if (const char* value = std::getenv(kReexecEnv)) {
        std::string_view v = value;
        size_t a = v.find(':');
        size_t b = a == std::string_view::npos ? a : v.find(':', a + 1);
        if (b != std::string_view::npos) {
            p.count = std::atoi(std::string(v.substr(0, a)).c_str());
            p.first_usec =
                std::strtoull(std::string(v.substr(a + 1, b - a - 1)).c_str(), nullptr, 10);
        }
    }
    if (p.exe.empty() || p.args.empty()) return;
    uint64_t now = monotonic_usec();
    if (limit_reached(now)) return;  // a crash now ends the daemon
    p.crash_entry = next_entry("crash", now);
    p.argv = pointers(p.args);
    p.envp.clear();
    for (auto& e : p.env) p.envp.push_back(e.data());
    p.envp.push_back(p.crash_entry.data());
    p.envp.push_back(nullptr);
    struct sigaction sa {};
    sa.sa_sigaction = on_fatal_signal;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) ::sigaction(sig, &sa, nullptr);
    p.handlers_installed = true;
}

std::string reexec_now(const std::string& reason) {
    Prepared& p = prepared();
    if (p.exe.empty() || p.args.empty()) return "the daemon's own path or arguments are unknown";
    uint64_t now = monotonic_usec();
    if (reason != "upgrade" && limit_reached(now))
        return std::to_string(kMaxQuickReexecs) + " re-executions within " +
               std::to_string(kQuickWindow.count()) + "s already";
    std::vector<std::string> env = p.env;
    // An upgrade is no crash: it does not count towards the loop limit.
    env.push_back(reason == "upgrade" ? std::string(kReexecEnv) + "=0:0:upgrade"
                                      : next_entry(reason, now));
    std::vector<std::string> args = p.args;
    auto argv = pointers(args);
    auto envp = pointers(env);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    close_on_exec_from_3();
    ::execve(p.exe.c_str(), argv.data(), envp.data());
    return std::string("execve ") + p.exe + ": " + strerror(errno);
}

}  // namespace infervisor
