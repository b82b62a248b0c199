#include "ctl_process.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

namespace infervisor::testing {

namespace {

std::string ctl_path() {
    const char* path = std::getenv("INFERVISORCTL");
    if (!path) throw std::runtime_error("INFERVISORCTL is not set (run through meson test)");
    return path;
}

// Runs in the forked child, so it must not throw: an exception would unwind
// into a copy of the test runner, which would go on running the other tests
// (and fork again). The path is resolved in the parent, before the fork.
[[noreturn]] void exec_ctl(std::string path, const std::vector<std::string>& args,
                           const CtlOptions& options) noexcept {
    std::vector<std::string> env_strings = {"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "TZ=UTC"};
    for (const auto& [k, v] : options.env) env_strings.push_back(k + "=" + v);
    std::vector<char*> argv{path.data()}, envp;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (auto& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
    if (options.as_nobody &&
        (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
         ::setresuid(65534, 65534, 65534) != 0))
        ::_exit(121);
    ::execve(path.c_str(), argv.data(), envp.data());
    ::_exit(127);
}

// Reads both until both are closed.
void drain(int out_fd, int err_fd, CtlResult& result) {
    pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
    std::string* sinks[2] = {&result.out, &result.err};
    int open = err_fd >= 0 ? 2 : 1;
    if (err_fd < 0) fds[1].fd = -1;
    while (open > 0) {
        if (::poll(fds, 2, 20000) <= 0) break;
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || !fds[i].revents) continue;
            char buffer[4096];
            ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
            if (n <= 0) {
                fds[i].fd = -1;
                --open;
            } else {
                sinks[i]->append(buffer, static_cast<std::size_t>(n));
            }
        }
    }
}

int reap(pid_t pid) {
    int status = 0;
    if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
}

}  // namespace

CtlResult run_ctl(const std::vector<std::string>& args, const CtlOptions& options) {
    std::string path = ctl_path();
    int in[2], out[2], err[2];
    if (::pipe2(in, O_CLOEXEC) || ::pipe2(out, O_CLOEXEC) || ::pipe2(err, O_CLOEXEC)) return {};
    bool on_pty = options.stdout_on_pty || options.stdin_on_pty;
    int pty_master = -1, pty_slave = -1;
    if (on_pty && ::openpty(&pty_master, &pty_slave, nullptr, nullptr, nullptr)) return {};
    pid_t pid = ::fork();
    if (pid == 0) {
        ::dup2(options.stdin_on_pty ? pty_slave : in[0], 0);
        ::dup2(on_pty ? pty_slave : out[1], 1);
        ::dup2(on_pty ? pty_slave : err[1], 2);
        exec_ctl(path, args, options);
    }
    ::close(in[0]);
    ::close(out[1]);
    ::close(err[1]);
    if (pty_slave >= 0) ::close(pty_slave);
    // Typed ahead: the terminal's line discipline keeps it until it is read.
    int input = options.stdin_on_pty ? pty_master : in[1];
    if (!options.stdin_text.empty())
        (void)!::write(input, options.stdin_text.data(), options.stdin_text.size());
    ::close(in[1]);
    CtlResult result;
    if (on_pty) {
        drain(pty_master, -1, result);  // EIO once the child has gone
        ::close(pty_master);
    } else {
        drain(out[0], err[0], result);
    }
    ::close(out[0]);
    ::close(err[0]);
    result.exit_code = reap(pid);
    return result;
}

RunningCtl start_ctl(const std::vector<std::string>& args) {
    std::string path = ctl_path();
    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) || ::pipe2(err, O_CLOEXEC)) return {};
    pid_t pid = ::fork();
    if (pid == 0) {
        ::dup2(out[1], 1);
        ::dup2(err[1], 2);
        exec_ctl(path, args, {});
    }
    ::close(out[1]);
    ::close(err[1]);
    return {pid, out[0], err[0]};
}

std::string RunningCtl::read_line() {
    std::string line;
    char c;
    pollfd pfd{out_fd, POLLIN, 0};
    while (::poll(&pfd, 1, 20000) == 1 && ::read(out_fd, &c, 1) == 1) {
        if (c == '\n') return line;
        line += c;
    }
    return line;
}

CtlResult RunningCtl::wait() {
    CtlResult result;
    drain(out_fd, err_fd, result);
    result.exit_code = reap(pid);
    ::close(out_fd);
    ::close(err_fd);
    pid = -1;
    return result;
}

void RunningCtl::stop() {
    if (pid < 0) return;
    ::kill(pid, SIGTERM);
    reap(pid);
    ::close(out_fd);
    ::close(err_fd);
    pid = -1;
}

}  // namespace infervisor::testing
