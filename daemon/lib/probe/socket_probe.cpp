#include "probe/socket_probe.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <optional>

#include "base/units.h"
#include "probe/http_head.h"

namespace infervisor {

namespace asio = boost::asio;
using boost::system::error_code;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

namespace {

// One client context for every HTTPS probe (an SSL_CTX costs far more than a
// connection). TLS 1.2 or later; no certificate verification (see ProbeSpec::tls).
ssl::context& tls_client_context() {
    static ssl::context context = [] {
        ssl::context c(ssl::context::tls_client);
        c.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                      ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
        c.set_verify_mode(ssl::verify_none);
        return c;
    }();
    return context;
}

// A peer that closes a TLS connection without close_notify: for a probe that
// has what it reads, as good as an end of file.
bool is_end_of_stream(const error_code& ec) {
    return ec == asio::error::eof || ec == ssl::error::stream_truncated;
}

class SocketProbe final : public ProbeAttempt, public std::enable_shared_from_this<SocketProbe> {
  public:
    SocketProbe(asio::io_context& io, const ProbeSpec& spec, ProbeDone done)
        : spec_(spec), socket_(io), timer_(io), done_(std::move(done)) {}

    void start(Duration timeout) {
        error_code ec;
        auto address = asio::ip::make_address(spec_.host, ec);
        if (ec) return post_finish(false, "bad address '" + spec_.host + "'");
        timer_.expires_after(timeout);
        timer_.async_wait([self = shared_from_this(), timeout](const error_code& e) {
            if (!e)
                self->finish(false, "no answer within " + format_duration(timeout) + " (" +
                                        self->phase_ + ")");
        });
        tcp::endpoint endpoint(address, static_cast<unsigned short>(spec_.port));
        socket_.async_connect(
            endpoint, [self = shared_from_this()](const error_code& e) { self->on_connected(e); });
    }

    void cancel() override {
        done_ = nullptr;
        close();
    }

  private:
    void on_connected(const error_code& ec) {
        if (!done_) return;
        if (ec) return finish(false, "connect: " + ec.message());
        if (spec_.kind == ProbeKind::tcp) return finish(true, "connected");
        if (!spec_.tls) return send_request();
        phase_ = "TLS handshake";
        tls_.emplace(socket_, tls_client_context());
        tls_->async_handshake(ssl::stream_base::client,
                              [self = shared_from_this()](const error_code& e) {
                                  if (!self->done_) return;
                                  if (e)
                                      return self->finish(false, "TLS handshake: " + e.message());
                                  self->send_request();
                              });
    }

    // Runs `op` on the stream the request and answer go through: the TLS
    // stream for https, the socket itself for http.
    template <typename Op>
    void on_stream(Op&& op) {
        if (tls_)
            op(*tls_);
        else
            op(socket_);
    }

    void send_request() {
        phase_ = "sending the request";
        request_ = "GET " + spec_.path + " HTTP/1.1\r\nHost: " + host_header() +
                   "\r\nUser-Agent: infervisor-probe\r\nAccept: */*\r\nConnection: close\r\n\r\n";
        on_stream([this](auto& stream) {
            asio::async_write(
                stream, asio::buffer(request_),
                [self = shared_from_this()](const error_code& e, size_t) { self->on_sent(e); });
        });
    }

    std::string host_header() const {
        std::string host =
            spec_.host.find(':') != std::string::npos ? "[" + spec_.host + "]" : spec_.host;
        return host + ":" + std::to_string(spec_.port);
    }

    void on_sent(const error_code& ec) {
        if (!done_) return;
        if (ec) return finish(false, "sending the request: " + ec.message());
        phase_ = "reading the answer";
        answer_.reserve(1024);
        read_more();
    }

    void read_more() {
        size_t room = kMaxHttpHead - answer_.size();
        size_t at = answer_.size();
        answer_.resize(at + std::min<size_t>(room, 4096));
        on_stream([this, at](auto& stream) {
            stream.async_read_some(asio::buffer(answer_.data() + at, answer_.size() - at),
                                   [self = shared_from_this(), at](const error_code& e, size_t n) {
                                       self->answer_.resize(at + n);
                                       self->on_read(e, at);
                                   });
        });
    }

    void on_read(const error_code& ec, size_t seen) {
        if (!done_) return;
        HttpHead head = parse_http_head(answer_, seen);
        if (head.state == HttpHead::State::malformed) return finish(false, head.error);
        if (head.state == HttpHead::State::complete) return judge(head.status);
        if (is_end_of_stream(ec))
            return finish(false, answer_.empty() ? "connection closed without an answer"
                                                 : "connection closed within the headers");
        if (ec) return finish(false, "reading the answer: " + ec.message());
        if (answer_.size() >= kMaxHttpHead)
            return finish(false, "status line and headers longer than " +
                                     std::to_string(kMaxHttpHead / 1024) + "K");
        read_more();
    }

    void judge(int status) {
        status_ = status;
        bool passed = status >= spec_.status_min && status <= spec_.status_max;
        finish(passed, "HTTP " + std::to_string(status));
    }

    void post_finish(bool passed, std::string detail) {
        asio::post(socket_.get_executor(),
                   [self = shared_from_this(), passed, detail = std::move(detail)] {
                       self->finish(passed, detail);
                   });
    }

    void finish(bool passed, std::string detail) {
        close();
        if (!done_) return;
        auto done = std::move(done_);
        done_ = nullptr;
        ProbeOutcome outcome{passed, std::move(detail), status_};
        done(std::move(outcome));
    }

    void close() {
        timer_.cancel();
        error_code ignored;
        socket_.close(ignored);
    }

    ProbeSpec spec_;
    tcp::socket socket_;
    std::optional<ssl::stream<tcp::socket&>> tls_;  // https: on socket_, once connected
    asio::steady_timer timer_;
    ProbeDone done_;
    std::string phase_ = "connecting";
    std::string request_;
    std::string answer_;
    std::optional<int> status_;
};

}  // namespace

std::shared_ptr<ProbeAttempt> start_socket_probe(asio::io_context& io, const ProbeSpec& spec,
                                                 Duration timeout, ProbeDone done) {
    auto probe = std::make_shared<SocketProbe>(io, spec, std::move(done));
    probe->start(timeout);
    return probe;
}

}  // namespace infervisor
