// SshTunnel: ssh running the stdio bridge on a remote host, its stdin and
// stdout one end of a socket pair, the other end a connected stream socket
// for VarlinkClient (which speaks to it as to the local control socket).
// ssh's stderr is ours: what ssh says (host unreachable, key refused) and
// what the bridge says (the daemon is not running there) reach the user.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace infervisor::cli {

class SshTunnel {
  public:
    // Spawns `argv` (ssh_argv()). The fd is the client's end.
    static Result<SshTunnel> open(const std::vector<std::string>& argv);
    SshTunnel(SshTunnel&& other) noexcept;
    SshTunnel& operator=(SshTunnel&&) = delete;
    ~SshTunnel();

    UniqueFd take_client_end() { return std::move(client_); }
    // Waits for ssh to end (after the client end was closed) and returns its
    // exit status: the remote command's (the bridge: 4 daemon not running,
    // 5 permission denied), or 255 when ssh itself failed.
    int wait();
    // Ends ssh now (SIGTERM) and reaps it: for a host that did not answer
    // in time, whose ssh would otherwise wait for it on EOF.
    void terminate();

  private:
    SshTunnel(pid_t pid, UniqueFd client) : pid_(pid), client_(std::move(client)) {}
    pid_t pid_ = -1;
    UniqueFd client_;
    std::optional<int> status_;
};

}  // namespace infervisor::cli
