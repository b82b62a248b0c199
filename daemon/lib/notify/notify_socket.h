// NotifySocket: a worker's private sd_notify datagram socket, bound at a path
// under the runtime dir and passed to the worker as NOTIFY_SOCKET.
//
// Contract: SO_PASSCRED is on, so each datagram arrives with the sender's
// kernel-verified pid/uid; receive() never blocks (the socket is
// non-blocking) and truncated datagrams are reported as such, not parsed.
// The socket file is removed on destruction.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"

namespace infervisor {

struct NotifyDatagram {
    pid_t pid = 0;  // 0 when the kernel gave no credentials
    uid_t uid = 0;
    std::string data;
    bool truncated = false;
};

class NotifySocket {
  public:
    // Binds at `path` (replacing a stale socket there, never another kind of
    // file) and lets `owner` send to it (chown; mode 0600). The file is
    // removed on destruction unless another socket has replaced it.
    static Result<NotifySocket> bind(const std::filesystem::path& path, uid_t owner, gid_t group);

    NotifySocket(NotifySocket&&) noexcept = default;
    NotifySocket& operator=(NotifySocket&&) noexcept = default;
    ~NotifySocket();

    int fd() const { return fd_.get(); }
    const std::filesystem::path& path() const { return path_; }

    // One pending datagram, or nullopt when there is none.
    Result<std::optional<NotifyDatagram>> receive();

  private:
    static constexpr size_t kMaxDatagram = 4096;
    NotifySocket(UniqueFd fd, std::filesystem::path path, dev_t dev, ino_t ino)
        : fd_(std::move(fd)), path_(std::move(path)), dev_(dev), ino_(ino) {}
    UniqueFd fd_;
    std::filesystem::path path_;
    // Identity of the socket file we bound: on destruction the path is
    // unlinked only if it is still ours (a successor may have bound there).
    dev_t dev_ = 0;
    ino_t ino_ = 0;
};

// True when process `pid` is in the cgroup at `cgroup_path` (the path as
// /proc/PID/cgroup shows it, e.g. "/system.slice/infervisor-workers.service/workers/llama"),
// or in a cgroup below it.
bool process_in_cgroup(const std::filesystem::path& procfs, pid_t pid,
                       const std::string& cgroup_path);

}  // namespace infervisor
