#include "pager.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <iostream>

namespace infervisor::cli {

namespace {

const char* env_or_null(const char* name) { return std::getenv(name); }

// "less" or "less ARGS": the one pager whose secure mode we know.
bool is_less(const std::string& command) {
    return command == "less" || command.rfind("less ", 0) == 0 || command == "/usr/bin/less" ||
           command.rfind("/usr/bin/less ", 0) == 0;
}

}  // namespace

bool pager_secure_mode() {
    if (const char* asked = env_or_null("SYSTEMD_PAGERSECURE")) {
        std::string value = asked;
        if (value == "0" || value == "no" || value == "false") return false;
        if (value == "1" || value == "yes" || value == "true") return true;
    }
    return env_or_null("SUDO_UID") != nullptr || ::getuid() != ::geteuid();
}

std::string pager_command() {
    const char* command = env_or_null("SYSTEMD_PAGER");
    if (!command) command = env_or_null("PAGER");
    std::string chosen = command ? command : "less";
    if (chosen.find_first_not_of(" \t") == std::string::npos || chosen == "cat") return "";
    if (pager_secure_mode() && !is_less(chosen)) return "";
    return chosen;
}

void Pager::start() {
    if (pid_ >= 0 || ::isatty(STDOUT_FILENO) != 1) return;
    std::string command = pager_command();
    if (command.empty()) return;
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) < 0) return;
    std::cout.flush();
    pid_t pid = ::fork();
    if (pid < 0) {
        ::close(fds[0]);
        ::close(fds[1]);
        return;
    }
    if (pid == 0) {
        ::dup2(fds[0], STDIN_FILENO);
        ::setenv("LESS", "FRXMK", 0);
        // Always, whatever the caller's environment says: no shell escapes.
        ::setenv("LESSSECURE", "1", 1);
        ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
    }
    ::close(fds[0]);
    ::dup2(fds[1], STDOUT_FILENO);
    ::close(fds[1]);
    // A pager that quits early (q) must not kill us with SIGPIPE mid-write.
    ::signal(SIGPIPE, SIG_IGN);
    pid_ = pid;
}

void Pager::finish() {
    if (pid_ < 0) return;
    std::cout.flush();
    ::close(STDOUT_FILENO);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
}

}  // namespace infervisor::cli
