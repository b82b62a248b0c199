#include "metrics/metrics_http_server.h"

#include <spdlog/spdlog.h>

#include <array>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>

namespace infervisor {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

std::string reply(int code, std::string_view reason, std::string_view type, std::string_view body,
                  bool head) {
    std::string out = "HTTP/1.0 " + std::to_string(code) + " " + std::string(reason) +
                      "\r\nContent-Type: " + std::string(type) +
                      "\r\nContent-Length: " + std::to_string(body.size()) +
                      "\r\nConnection: close\r\n\r\n";
    if (!head) out += body;
    return out;
}

std::string plain(int code, std::string_view reason, std::string_view text) {
    return reply(code, reason, "text/plain; charset=utf-8", text, false);
}

// One connection: read the request head, answer, close.
class Session : public std::enable_shared_from_this<Session> {
  public:
    using Slot = MetricsHttpServer::Slot;
    using Phase = MetricsHttpServer::Phase;

    Session(tcp::socket socket, MetricsHttpServer::Render render, std::shared_ptr<size_t> open)
        : socket_(std::move(socket)),
          timer_(socket_.get_executor()),
          buffer_(MetricsHttpServer::kMaxRequest),
          render_(std::move(render)),
          open_(std::move(open)) {
        ++*open_;
    }
    ~Session() { --*open_; }

    // The server keeps a weak reference; eviction closes the socket, and the
    // pending handlers end the session.
    const std::shared_ptr<Slot>& slot() const { return slot_; }

    void run() {
        auto self = shared_from_this();
        std::weak_ptr<Session> weak = self;
        slot_->evict = [weak] {
            if (auto session = weak.lock()) session->close();
        };
        timer_.expires_after(MetricsHttpServer::kDeadline);
        timer_.async_wait([self](const boost::system::error_code& ec) {
            if (!ec) self->close();
        });
        asio::async_read_until(
            socket_, buffer_, "\r\n\r\n",
            [self](const boost::system::error_code& ec, size_t n) { self->on_request(ec, n); });
    }

  private:
    void on_request(const boost::system::error_code& ec, size_t n) {
        if (ec == asio::error::not_found) return respond(plain(400, "Bad Request", "too long\n"));
        if (ec) return close();
        slot_->phase = Phase::answering;
        std::string head(asio::buffers_begin(buffer_.data()),
                         asio::buffers_begin(buffer_.data()) + static_cast<long>(n));
        respond(metrics_http_reply(head, render_));
    }

    void respond(std::string text) {
        slot_->phase = Phase::answering;
        reply_ = std::move(text);
        auto self = shared_from_this();
        asio::async_write(socket_, asio::buffer(reply_),
                          [self](const boost::system::error_code& ec, size_t) {
                              if (ec) return self->close();
                              self->linger();
                          });
    }

    // A graceful close: no more to send, then read and drop whatever the
    // client still sends until it closes (or the deadline), so that unread
    // request bytes do not turn the close into a reset that loses the reply.
    void linger() {
        slot_->phase = Phase::answered;
        boost::system::error_code ignored;
        socket_.shutdown(tcp::socket::shutdown_send, ignored);
        auto self = shared_from_this();
        socket_.async_read_some(asio::buffer(scratch_),
                                [self](const boost::system::error_code& ec, size_t) {
                                    if (ec) return self->close();
                                    self->linger();
                                });
    }

    void close() {
        boost::system::error_code ignored;
        timer_.cancel();
        socket_.shutdown(tcp::socket::shutdown_both, ignored);
        socket_.close(ignored);
    }

    tcp::socket socket_;
    asio::steady_timer timer_;
    asio::streambuf buffer_;
    MetricsHttpServer::Render render_;
    std::shared_ptr<size_t> open_;
    std::shared_ptr<Slot> slot_ = std::make_shared<Slot>();
    std::string reply_;
    std::array<char, 1024> scratch_{};
};

}  // namespace

std::string metrics_http_reply(std::string_view request, const MetricsHttpServer::Render& render) {
    size_t eol = request.find("\r\n");
    std::string_view line = request.substr(0, eol);
    size_t sp1 = line.find(' ');
    size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp2 == std::string_view::npos || !line.substr(sp2 + 1).starts_with("HTTP/"))
        return plain(400, "Bad Request", "malformed request line\n");
    std::string_view method = line.substr(0, sp1);
    std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    if (method != "GET" && method != "HEAD")
        return plain(405, "Method Not Allowed", "only GET and HEAD\n");
    std::string_view path = target.substr(0, target.find('?'));
    if (path != "/metrics") return plain(404, "Not Found", "infervisord: try /metrics\n");
    auto body = render();
    return reply(200, "OK", "text/plain; version=0.0.4; charset=utf-8", body ? *body : "",
                 method == "HEAD");
}

MetricsHttpServer::MetricsHttpServer(asio::io_context& io, Render render)
    : render_(std::move(render)), acceptor_(io), retry_(io) {}

MetricsHttpServer::~MetricsHttpServer() {
    stop();
    alive_.reset();
}

Result<void> MetricsHttpServer::start(const tcp::endpoint& at) {
    boost::system::error_code ec;
    acceptor_.open(at.protocol(), ec);
    if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor_.bind(at, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
        boost::system::error_code ignored;
        acceptor_.close(ignored);
        return plain_error("metrics listener on " + at.address().to_string() + ":" +
                           std::to_string(at.port()) + ": " + ec.message());
    }
    running_ = true;
    accept();
    return {};
}

void MetricsHttpServer::stop() {
    running_ = false;
    retry_.cancel();
    boost::system::error_code ignored;
    acceptor_.close(ignored);
}

tcp::endpoint MetricsHttpServer::local_endpoint() const {
    boost::system::error_code ec;
    return acceptor_.local_endpoint(ec);
}

void MetricsHttpServer::accept() {
    std::weak_ptr<char> alive = alive_;
    acceptor_.async_accept([this, alive](const boost::system::error_code& ec, tcp::socket socket) {
        if (alive.expired() || !running_ || ec == asio::error::operation_aborted) return;
        if (!ec) {
            // An evicted session ends on the loop's next turn: until then
            // the count is one above the limit.
            if (*open_ >= kMaxConnections && !evict_one()) {
                boost::system::error_code ignored;
                socket.close(ignored);
            } else {
                auto session = std::make_shared<Session>(std::move(socket), render_, open_);
                slots_.remove_if([](const std::weak_ptr<Slot>& s) { return s.expired(); });
                slots_.push_back(session->slot());
                session->run();
            }
            accept();
            return;
        }
        // Out of descriptors or the like: try again a little later, not in a busy loop.
        spdlog::debug("metrics listener: accept: {}", ec.message());
        retry_.expires_after(std::chrono::milliseconds(200));
        retry_.async_wait([this, alive](const boost::system::error_code& e) {
            if (!e && !alive.expired() && running_) accept();
        });
    });
}

bool MetricsHttpServer::evict_one() {
    for (auto it = slots_.begin(); it != slots_.end();) {
        auto slot = it->lock();
        if (!slot) {
            it = slots_.erase(it);
            continue;
        }
        if (slot->phase != Phase::answering) {
            slots_.erase(it);
            spdlog::debug("metrics listener: {} connections open; closing the oldest idle one",
                          *open_);
            slot->evict();
            return true;
        }
        ++it;
    }
    return false;
}

}  // namespace infervisor
