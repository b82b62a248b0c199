// RefusedConnections: how the control server turns away a connection that
// is over its ConnectionQuota.
//
// The client gets a TooManyConnections error with the limit (see
// varlink_errors.h) rather than a bare reset: the error is written at once
// without blocking (it is small and the socket is new, so it fits the send
// buffer), then the server shuts down its sending side and, for at most
// `linger`, reads and discards what the client sends, so that a client that
// already sent its call can still read the error instead of getting EPIPE.
// At most max_lingering refused connections linger at once; beyond that they
// are closed right after the error. Refusals are logged with the uid and pid,
// at most one line per log_interval (the next one counts those left out).
//
// All members are called on the io_context's thread; the object must be
// owned by a shared_ptr (the lingering reads hold it).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <unordered_set>

#include "base/clock.h"
#include "control/asio_coro.h"
#include "control/connection_quota.h"
#include "control/peer_credentials.h"

namespace infervisor {

struct RefusalOptions {
    Duration linger = std::chrono::seconds(2);
    std::size_t max_lingering = 64;
    Duration log_interval = std::chrono::seconds(10);
};

class RefusedConnections : public std::enable_shared_from_this<RefusedConnections> {
  public:
    using Socket = boost::asio::local::stream_protocol::socket;

    explicit RefusedConnections(RefusalOptions options = {}) : options_(options) {}

    void refuse(Socket socket, const PeerCredentials& peer, const ConnectionRefusal& why);
    // Closes every lingering connection at once (server shutdown).
    void close_all();

    std::size_t lingering() const { return lingering_.size(); }

  private:
    boost::asio::awaitable<void> linger(std::shared_ptr<Socket> socket);
    void log(const PeerCredentials& peer, const ConnectionRefusal& why);

    RefusalOptions options_;
    std::unordered_set<std::shared_ptr<Socket>> lingering_;
    std::chrono::steady_clock::time_point last_log_;
    bool logged_ = false;
    std::size_t unlogged_ = 0;  // refusals since the last log line
};

}  // namespace infervisor
