// ControlSession: one client connection of the control socket.
//
// Calls are answered one at a time, in order (Varlink allows pipelining;
// later calls wait, buffered, until the earlier one has its final reply).
// The connection is closed when the client
//  - sends bytes that are not a Varlink call (after an error reply),
//  - has more than max_message_size unconsumed bytes buffered,
//  - lets its unsent replies grow past max_output (it does not read),
//  - is idle for idle_timeout: no call in progress, no subscription, and no
//    read or write progress.
// A single reply larger than max_output is not sent: the call fails with
// ReplyTooLarge (size, limit) instead and the connection stays open.
// A call in progress (e.g. Stop waiting for the worker) does not count as
// idle; an event subscription never does. End of input (shutdown(SHUT_WR))
// lets the calls already received finish before the connection is closed.
// Nothing here blocks the event loop.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <unordered_set>

#include "base/clock.h"
#include "control/asio_coro.h"
#include "control/connection_quota.h"
#include "control/peer_credentials.h"
#include "control/varlink_framer.h"
#include "control/varlink_service.h"

namespace infervisor {

struct SessionLimits {
    Duration idle_timeout = std::chrono::seconds(30);
    std::size_t max_message_size = kMaxCallBytes;  // bytes, without the NUL
    std::size_t max_output = 4 << 20;              // unsent reply bytes
};

class ControlSession;

// What all sessions of one server share; outlives the server object while
// any session is still winding down.
struct SessionHub {
    SessionHub(SupervisorApi& supervisor, AccessPolicy policy, SessionLimits session_limits,
               ConnectionLimits connection_limits)
        : service(supervisor, policy), limits(session_limits), quota(connection_limits) {}
    VarlinkService service;
    SessionLimits limits;
    ConnectionQuota quota;
    std::unordered_set<ControlSession*> sessions;
};

class ControlSession : public std::enable_shared_from_this<ControlSession> {
  public:
    using Socket = boost::asio::local::stream_protocol::socket;

    // `slot` counts the connection against its peer's quota in the hub.
    ControlSession(Socket socket, PeerCredentials peer, std::shared_ptr<SessionHub> hub,
                   ConnectionQuota::Slot slot);
    ~ControlSession();
    ControlSession(const ControlSession&) = delete;
    ControlSession& operator=(const ControlSession&) = delete;

    // Registers with the hub and starts reading, writing and the idle watch.
    void start();
    // Idempotent; drops pending replies and the subscription.
    void close();

  private:
    class CallSink;
    using Clock = std::chrono::steady_clock;

    boost::asio::awaitable<void> read_loop();
    boost::asio::awaitable<void> write_loop();
    boost::asio::awaitable<void> watch_idle();

    void process_input();
    void handle_message(const std::string& message);
    void call_finished(const CallSink* sink);
    void enqueue(const std::string& bytes);
    void close_after_flush();
    void touch();
    void update_deadline();

    Socket socket_;
    PeerCredentials peer_;
    std::shared_ptr<SessionHub> hub_;
    ConnectionQuota::Slot slot_;  // after hub_: released before the hub may go
    VarlinkFramer framer_;
    boost::asio::steady_timer idle_timer_;
    boost::asio::steady_timer write_wakeup_;
    Clock::time_point last_activity_;
    Clock::time_point deadline_ = Clock::time_point::max();

    std::string output_;         // encoded replies not yet handed to the socket
    std::size_t in_flight_ = 0;  // bytes handed to the socket, not yet written
    std::shared_ptr<CallSink> current_call_;
    Subscription subscription_;
    bool busy_ = false;         // a call awaits its final reply
    bool dispatching_ = false;  // inside process_input()
    bool input_ended_ = false;
    bool closing_ = false;  // close once output_ is written
    bool closed_ = false;
};

}  // namespace infervisor
