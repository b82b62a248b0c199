// MetricsHttpServer: a minimal HTTP/1.0 responder for Prometheus scrapes,
// opt-in (metrics.listen) and on the daemon's event loop.
//
// Why this is safe on the loop: it only ever writes a body that is already
// rendered (the `render` callback returns the text of the last evaluation
// round, rendered at most once per round), and every connection is bounded:
// a request (line and headers) of at most kMaxRequest bytes, kDeadline for
// the whole exchange (read, then write), at most kMaxConnections at once.
// Held connections cannot starve the scraper (issue 26, defect 10: over
// loopback every local user is 127.0.0.1, and 16 idle connections kept
// Prometheus out): when all slots are taken, a new connection evicts the
// oldest one that has not sent a complete request yet or has had its
// answer; only when every slot is busy writing an answer is the new one
// closed at once. A scraper sends its request as soon as it connects, so it
// is never the oldest idle connection for long. One request per connection; the reply
// says "Connection: close", and the server closes gracefully (it stops
// sending, then drops what the client still sends until it closes, within
// the deadline). GET/HEAD /metrics → 200 text/plain; version=0.0.4;
// other paths → 404, other methods → 405, an oversized or malformed request →
// 400, a silent client → closed at the deadline.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <list>
#include <memory>
#include <string>

#include "base/result.h"

namespace infervisor {

class MetricsHttpServer {
  public:
    static constexpr size_t kMaxRequest = 8192;
    static constexpr size_t kMaxConnections = 16;
    static constexpr std::chrono::seconds kDeadline{10};

    using Render = std::function<std::shared_ptr<const std::string>()>;

    MetricsHttpServer(boost::asio::io_context& io, Render render);
    ~MetricsHttpServer();
    MetricsHttpServer(const MetricsHttpServer&) = delete;
    MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

    // Binds and listens (SO_REUSEADDR); port 0 picks a free port (tests).
    Result<void> start(const boost::asio::ip::tcp::endpoint& at);
    void stop();
    boost::asio::ip::tcp::endpoint local_endpoint() const;
    size_t open_connections() const { return *open_; }

    // What a connection is doing; only `answering` keeps its slot when a
    // new connection needs one.
    enum class Phase { awaiting_request, answering, answered };
    struct Slot {
        Phase phase = Phase::awaiting_request;
        std::function<void()> evict;
    };

  private:
    void accept();
    // Closes the oldest evictable connection; false when there is none.
    bool evict_one();

    Render render_;
    boost::asio::ip::tcp::acceptor acceptor_;
    boost::asio::steady_timer retry_;
    std::shared_ptr<char> alive_ = std::make_shared<char>();
    std::shared_ptr<size_t> open_ = std::make_shared<size_t>(0);
    // Every connection's slot, oldest first (expired ones are skipped and
    // dropped as they are met).
    std::list<std::weak_ptr<Slot>> slots_;
    bool running_ = false;
};

// The reply to one request text (without the body for HEAD); for tests.
std::string metrics_http_reply(std::string_view request, const MetricsHttpServer::Render& render);

}  // namespace infervisor
