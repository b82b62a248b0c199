// ControlServer: the control socket of infervisord — accepts connections on
// an AF_UNIX stream socket and serves Varlink calls through VarlinkService.
//
// Access: the socket file is mode 0666 by default, so any local user may
// read status (as with `systemctl status`); every call that changes state is
// authorized per call from the peer's kernel credentials (see AccessPolicy,
// PeerCredentials). How many connections a client may hold is limited per
// uid and in total (ConnectionQuota); a connection over a limit gets a
// TooManyConnections error and is closed (RefusedConnections).
//
// stop() closes the acceptor and every session and unlinks the socket file;
// the io_context then drains by itself (io_context::stop() is not needed).
// All members are called on the io_context's thread. The SupervisorApi must
// outlive the io_context's run.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>

#include "base/paths.h"
#include "base/result.h"
#include "control/asio_coro.h"
#include "control/connection_quota.h"
#include "control/control_session.h"
#include "control/control_socket.h"
#include "control/supervisor_api.h"

namespace infervisor {

struct ControlServerOptions {
    std::filesystem::path path = "/run/infervisor/io.infervisor";
    std::optional<gid_t> control_group;  // may change things besides root
    Duration idle_timeout = std::chrono::seconds(30);
    std::size_t max_connections = 256;           // all clients together
    std::size_t max_connections_per_uid = 32;    // each uid but root
    std::size_t root_reserved_connections = 16;  // of max_connections
    std::size_t max_message_size = kMaxCallBytes;
    // Unsent bytes per connection; must exceed the largest reply (a List
    // costs about 320 bytes per worker).
    std::size_t max_output = 4 << 20;
    mode_t socket_mode = 0666;
};

struct ControlListener;  // the accepting side, in control_server.cpp

// Where the socket lives: <runtime_dir>/io.infervisor.
std::filesystem::path control_socket_path(const Paths& paths);

class ControlServer {
  public:
    ControlServer(boost::asio::io_context& io, SupervisorApi& supervisor,
                  ControlServerOptions options);
    ~ControlServer();
    ControlServer(const ControlServer&) = delete;
    ControlServer& operator=(const ControlServer&) = delete;

    // Creates the socket and starts accepting.
    Result<void> start();
    // Idempotent.
    void stop();

    std::size_t connection_count() const { return hub_->sessions.size(); }
    // Connections of `uid` counted against its quota.
    std::size_t connection_count(uid_t uid) const { return hub_->quota.held_by(uid); }

  private:
    boost::asio::io_context& io_;
    ControlServerOptions options_;
    std::shared_ptr<SessionHub> hub_;
    std::shared_ptr<ControlListener> listener_;
    BoundSocket bound_;  // identity of the socket file, to unlink only ours
};

}  // namespace infervisor
