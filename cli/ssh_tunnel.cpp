#include "ssh_tunnel.h"

#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <utility>

extern char** environ;

namespace infervisor::cli {

Result<SshTunnel> SshTunnel::open(const std::vector<std::string>& argv) {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
        return errno_error("create a socket pair for ssh");
    UniqueFd ours(pair[0]), theirs(pair[1]);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, theirs.get(), STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, theirs.get(), STDOUT_FILENO);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = -1;
    // posix_spawnp: `ssh` from PATH, as systemctl -H finds it.
    int rc = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
        errno = rc;
        return errno_error("run " + argv[0]);
    }
    return SshTunnel(pid, std::move(ours));
}

SshTunnel::SshTunnel(SshTunnel&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      client_(std::move(other.client_)),
      status_(other.status_) {}

SshTunnel::~SshTunnel() {
    if (pid_ > 0 && !status_) {
        client_.reset();  // EOF for the bridge: it ends, and ssh with it
        wait();
    }
}

int SshTunnel::wait() {
    if (status_) return *status_;
    if (pid_ <= 0) return 255;
    client_.reset();
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0)
        if (errno != EINTR) return *(status_ = 255);
    status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 255;
    return *status_;
}

void SshTunnel::terminate() {
    if (pid_ > 0 && !status_) ::kill(pid_, SIGTERM);
    wait();
}

}  // namespace infervisor::cli
