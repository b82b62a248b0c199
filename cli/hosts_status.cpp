#include "hosts_status.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <iostream>
#include <sstream>

#include "base/unique_fd.h"
#include "control/status_json.h"
#include "control/varlink_message.h"
#include "human_format.h"

extern char** environ;

namespace infervisor::cli {

namespace {

using nlohmann::json;

struct HostRun {
    std::string host;
    pid_t pid = -1;
    UniqueFd out, err;  // memfds: the child's whole stdout and stderr
    int exit_code = 255;
    bool spawned = false;
    bool timed_out = false;  // killed at the deadline
};

UniqueFd memfd(const char* name) { return UniqueFd(::memfd_create(name, MFD_CLOEXEC)); }

std::string read_all(int fd) {
    std::string text;
    ::lseek(fd, 0, SEEK_SET);
    char buffer[65536];
    for (;;) {
        ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        text.append(buffer, static_cast<size_t>(n));
    }
    return text;
}

// This binary, asked for one host's status as JSON, within `timeout` (it
// ends its own ssh then, also when this process is gone: Ctrl-C does not
// reach a process group of its own).
bool spawn_one(HostRun& run, const std::vector<std::string>& names, const std::string& timeout) {
    run.out = memfd("status-out");
    run.err = memfd("status-err");
    if (!run.out || !run.err) return false;
    std::vector<std::string> argv = {"infervisorctl", "--json", "--no-pager", "-H",
                                     run.host,        "status", "--timeout",  timeout};
    argv.insert(argv.end(), names.begin(), names.end());
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    std::vector<std::string> env_text;
    for (char** e = environ; *e; ++e)
        if (std::string_view(*e).rfind("INFERVISOR_SSH_BATCH=", 0) != 0) env_text.push_back(*e);
    env_text.push_back("INFERVISOR_SSH_BATCH=1");
    std::vector<char*> env;
    for (auto& e : env_text) env.push_back(e.data());
    env.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, run.out.get(), STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, run.err.get(), STDERR_FILENO);
    // A process group of its own, so that the deadline ends its ssh too.
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attributes, 0);
    int rc =
        ::posix_spawn(&run.pid, "/proc/self/exe", &actions, &attributes, args.data(), env.data());
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    return rc == 0;
}

// Reaps each run as it ends; past the deadline (each run's own --timeout,
// plus a grace for it to say so), kills what is left (each run's process
// group: infervisorctl and its ssh) and marks it timed out. A status is one
// short exchange, so looking every 20 ms costs nothing.
void wait_for_runs(std::vector<HostRun>& runs, Duration limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit + std::chrono::seconds(5);
    for (;;) {
        bool waiting = false;
        for (auto& run : runs) {
            if (run.pid <= 0) continue;
            int status = 0;
            pid_t done = ::waitpid(run.pid, &status, WNOHANG);
            if (done == 0) {
                waiting = true;
                continue;
            }
            if (done == run.pid) run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 255;
            run.pid = 0;  // reaped (or gone: ECHILD)
        }
        if (!waiting) return;
        if (std::chrono::steady_clock::now() >= deadline) break;
        ::usleep(20'000);
    }
    for (auto& run : runs) {
        if (run.pid <= 0) continue;
        ::kill(-run.pid, SIGKILL);
        int status = 0;
        while (::waitpid(run.pid, &status, 0) < 0 && errno == EINTR) {
        }
        run.pid = 0;
        // It may have ended on its own just before the kill.
        bool killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
        run.timed_out = killed;
        run.exit_code = killed ? kNotRunning : WIFEXITED(status) ? WEXITSTATUS(status) : 255;
    }
}

// The run's own --timeout passed: it says "HOST: no answer within D".
bool said_no_answer_in_time(const std::string& err) {
    return err.find("infervisorctl: ") != std::string::npos &&
           err.find(": no answer within ") != std::string::npos;
}

// Why a host did not answer, for its row: the last line ssh or the remote
// bridge said (the host's own process then only adds "ssh failed"), else
// that process's last line.
std::string why_no_answer(const std::string& text) {
    std::string ours, theirs;
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
        if (line.empty()) continue;
        if (line.rfind("infervisorctl: ", 0) == 0)
            ours = line.substr(15);
        else
            theirs = line;
    }
    if (!theirs.empty()) return theirs;
    return ours.empty() ? "no answer" : ours;
}

}  // namespace

void run_status_on_hosts(CliContext& ctx, const std::vector<std::string>& names, TableWidth width,
                         const HostsDeadline& deadline) {
    std::vector<HostRun> runs(ctx.hosts.size());
    for (size_t i = 0; i < runs.size(); ++i) {
        runs[i].host = ctx.hosts[i];
        runs[i].spawned = spawn_one(runs[i], names, deadline.text);
        if (!runs[i].spawned) runs[i].pid = -1;
    }
    wait_for_runs(runs, deadline.limit);
    json answers = json::array();
    bool all_answered = true;
    std::ostringstream table;
    std::vector<std::string> notes;
    size_t host_width = 4;  // "HOST"
    for (const auto& run : runs) host_width = std::max(host_width, run.host.size());
    bool header_done = false;
    for (auto& run : runs) {
        std::string out = run.out ? read_all(run.out.get()) : "";
        std::string err = run.err ? read_all(run.err.get()) : "";
        if (run.exit_code == kNotRunning && said_no_answer_in_time(err)) run.timed_out = true;
        json reply = json::parse(out, nullptr, false);
        // status's own 3 (a named worker not running) is still an answer.
        bool answered = (run.exit_code == 0 || run.exit_code == kWorkerNotRunning) &&
                        reply.is_object() && reply.contains("workers");
        std::string pad(host_width - std::min(host_width, run.host.size()) + 2, ' ');
        if (!answered) {
            all_answered = false;
            std::string why = !run.spawned    ? "could not run infervisorctl"
                              : run.timed_out ? "no answer within " + deadline.text
                                              : why_no_answer(err);
            answers.push_back({{"host", run.host}, {"error", why}, {"exit_code", run.exit_code}});
            table << printable(run.host) << pad << (run.timed_out ? "(" : "(no answer: ")
                  << printable(why) << ")\n";
            continue;
        }
        answers.push_back({{"host", run.host},
                           {"workers", reply["workers"]},
                           {"drained", reply.value("drained", false)}});
        if (reply.value("drained", false))
            notes.push_back(run.host + " is drained (infervisorctl -H " + run.host + " undrain)");
        std::vector<WorkerView> workers;
        for (const auto& item : reply["workers"]) workers.push_back(worker_view_from_json(item));
        std::ostringstream one;
        print_status_table(one, workers, ctx.colour, true, width);
        std::istringstream lines(one.str());
        std::string line;
        bool first = true;
        while (std::getline(lines, line)) {
            if (first) {
                first = false;
                if (!header_done && ctx.legend)
                    table << "HOST" << std::string(host_width - 4 + 2, ' ') << line << "\n";
                header_done = true;
                continue;
            }
            table << printable(run.host) << pad << line << "\n";
        }
    }
    ctx.page();
    if (ctx.json) {
        std::cout << dump_json({{"hosts", answers}}, 2) << "\n";
    } else {
        std::cout << table.str();
        for (const auto& note : notes) std::cout << printable(note) << "\n";
    }
    if (!all_answered) ctx.exit_code = kNotRunning;
}

}  // namespace infervisor::cli
