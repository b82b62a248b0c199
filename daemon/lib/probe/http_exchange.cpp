#include "probe/http_exchange.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include "base/units.h"
#include "probe/http_chunked.h"
#include "probe/http_head.h"
#include "probe/http_target.h"
#include "probe/tls_relay.h"

namespace infervisor {

namespace asio = boost::asio;
using boost::system::error_code;
using tcp = asio::ip::tcp;

namespace {

// The end of the connection. Over TLS the relay passes on the end of the TLS
// stream as this, also a peer that closes without close_notify (many servers
// do): the framing (Content-Length, the last chunk) says whether all came,
// and a body read to the end of the connection takes it as that end.
bool is_end_of_stream(const error_code& ec) { return ec == asio::error::eof; }

// A header name is a token; neither name nor value may hold a line break
// (or any control byte): a value from a credential file must not add lines
// to the request.
bool is_header_token(const std::string& name) {
    if (name.empty()) return false;
    for (unsigned char c : name)
        if (c <= ' ' || c >= 0x7f || c == ':') return false;
    return true;
}

bool is_header_value(const std::string& value) {
    for (unsigned char c : value)
        if ((c < ' ' && c != '\t') || c == 0x7f) return false;
    return true;
}

// What makes the request unsendable, or empty.
std::string request_problem(const HttpRequest& r) {
    if (r.method != "GET" && r.method != "POST") return "method must be GET or POST";
    if (!is_ip_literal(r.host)) return "bad address '" + r.host + "'";
    if (r.port < 1 || r.port > 65535) return "bad port " + std::to_string(r.port);
    if (!is_request_target(r.target)) return "bad request target";
    for (const auto& [name, value] : r.headers)
        if (!is_header_token(name) || !is_header_value(value))
            return "bad header line '" + (is_header_token(name) ? name : std::string("?")) + "'";
    return {};
}

constexpr size_t kReadPiece = 16 * 1024;

class Exchange final : public HttpExchange, public std::enable_shared_from_this<Exchange> {
  public:
    Exchange(asio::io_context& io, HttpRequest request, HttpDone done)
        : io_(io),
          request_(std::move(request)),
          socket_(io),
          timer_(io),
          done_(std::move(done)),
          chunked_(request_.max_body) {}

    void start(Duration timeout) {
        if (auto problem = request_problem(request_); !problem.empty())
            return post_fail(std::move(problem));
        timer_.expires_after(timeout);
        timer_.async_wait([self = shared_from_this(), timeout](const error_code& e) {
            if (!e)
                self->fail("no answer within " + format_duration(timeout) + " (" + self->phase_ +
                           ")");
        });
        tcp::endpoint endpoint(asio::ip::make_address(request_.host),
                               static_cast<unsigned short>(request_.port));
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
        if (ec) return fail("connect: " + ec.message());
        if (!request_.tls) return send_request();
        // TLS is the relay's (probe/tls_relay.h): it gets the connection, and
        // this side speaks plain HTTP with it. The deadline still counts.
        phase_ = "TLS handshake";
        auto relay = TlsRelay::start(io_, socket_.native_handle());
        error_code ignored;
        socket_.close(ignored);  // the relay holds the connection now
        if (!relay) return fail(relay.error().message());
        relay_ = std::move(*relay);
        relay_->await_ready([self = shared_from_this()](std::string error, std::string early) {
            if (!self->done_) return;
            if (!error.empty()) return self->fail(std::move(error));
            self->head_ = std::move(early);  // what the server said unasked
            self->send_request();
        });
    }

    // Runs `op` on the stream the request and answer go through: the plain
    // side of the TLS relay for https, the socket itself for http.
    template <typename Op>
    void on_stream(Op&& op) {
        if (relay_)
            op(relay_->plain());
        else
            op(socket_);
    }

    std::string host_header() const {
        const std::string& h = request_.host;
        return (h.find(':') != std::string::npos ? "[" + h + "]" : h) + ":" +
               std::to_string(request_.port);
    }

    std::string request_text() const {
        std::string text = request_.method + " " + request_.target +
                           " HTTP/1.1\r\nHost: " + host_header() +
                           "\r\nUser-Agent: infervisor\r\nAccept: */*\r\n";
        for (const auto& [name, value] : request_.headers) text += name + ": " + value + "\r\n";
        if (request_.method == "POST" || !request_.body.empty())
            text += "Content-Length: " + std::to_string(request_.body.size()) + "\r\n";
        return text + "Connection: close\r\n\r\n" + request_.body;
    }

    void send_request() {
        phase_ = "sending the request";
        wire_ = request_text();
        on_stream([this](auto& stream) {
            asio::async_write(
                stream, asio::buffer(wire_),
                [self = shared_from_this()](const error_code& e, size_t) { self->on_sent(e); });
        });
    }

    void on_sent(const error_code& ec) {
        if (!done_) return;
        wire_.clear();
        wire_.shrink_to_fit();
        if (ec) return fail("sending the request: " + ec.message());
        phase_ = "reading the answer";
        head_.reserve(1024);
        if (!head_.empty()) return on_head({}, 0);  // it came with the relay's status
        read_head();
    }

    // The head: read into head_ until the blank line, at most kMaxHttpHead.
    void read_head() {
        size_t at = head_.size();
        head_.resize(at + std::min<size_t>(kMaxHttpHead - at, 4096));
        on_stream([this, at](auto& stream) {
            stream.async_read_some(asio::buffer(head_.data() + at, head_.size() - at),
                                   [self = shared_from_this(), at](const error_code& e, size_t n) {
                                       self->head_.resize(at + n);
                                       self->on_head(e, at);
                                   });
        });
    }

    void on_head(const error_code& ec, size_t seen) {
        if (!done_) return;
        HttpHead head = parse_http_head(head_, seen);
        answer_.status = head.status;
        if (head.state == HttpHead::State::malformed) return fail(head.error);
        if (head.state == HttpHead::State::complete) return on_complete_head(std::move(head));
        if (is_end_of_stream(ec))
            return fail(head_.empty() ? "connection closed without an answer"
                                      : "connection closed within the headers");
        if (ec) return fail("reading the answer: " + ec.message());
        if (head_.size() >= kMaxHttpHead)
            return fail("status line and headers longer than " +
                        std::to_string(kMaxHttpHead / 1024) + "K");
        read_head();
    }

    void on_complete_head(HttpHead head) {
        answer_.content_type = std::move(head.content_type);
        if (request_.max_body == 0 || http_status_has_no_body(head.status)) return succeed();
        framing_ = head.framing;
        if (framing_ == HttpHead::Framing::invalid) return fail(head.framing_error);
        if (framing_ == HttpHead::Framing::length && head.content_length > request_.max_body)
            return fail(too_long());
        content_length_ = head.content_length;
        phase_ = "reading the body";
        take_body(std::string_view(head_).substr(head.size));
        if (!done_) return;
        head_.clear();
        head_.shrink_to_fit();
        read_body();
    }

    std::string too_long() const {
        return "body longer than " + std::to_string(request_.max_body) + " bytes";
    }

    // Takes the next bytes of the body by its framing; ends the exchange
    // (done_ is then empty) once the body is whole or cannot be.
    void take_body(std::string_view data) {
        switch (framing_) {
            case HttpHead::Framing::chunked:
                if (chunked_.feed(data) == ChunkedBody::State::error) return fail(chunked_.error());
                if (chunked_.state() == ChunkedBody::State::done) {
                    answer_.body = chunked_.take_body();
                    succeed();
                }
                return;
            case HttpHead::Framing::length: {
                size_t n = std::min<uint64_t>(data.size(), content_length_ - answer_.body.size());
                answer_.body.append(data.substr(0, n));
                if (answer_.body.size() == content_length_) succeed();
                return;
            }
            default:  // to the end of the connection
                if (data.size() > request_.max_body - answer_.body.size()) return fail(too_long());
                answer_.body.append(data);
                return;
        }
    }

    void read_body() {
        piece_.resize(kReadPiece);
        on_stream([this](auto& stream) {
            stream.async_read_some(asio::buffer(piece_),
                                   [self = shared_from_this()](const error_code& e, size_t n) {
                                       self->on_body(e, n);
                                   });
        });
    }

    void on_body(const error_code& ec, size_t n) {
        if (!done_) return;
        take_body(std::string_view(piece_.data(), n));
        if (!done_) return;
        if (is_end_of_stream(ec)) {
            if (framing_ == HttpHead::Framing::to_end) return succeed();
            return fail("connection closed within the body");
        }
        if (ec) return fail("reading the body: " + ec.message());
        read_body();
    }

    void post_fail(std::string error) {
        asio::post(socket_.get_executor(),
                   [self = shared_from_this(), error = std::move(error)] { self->fail(error); });
    }

    void succeed() {
        answer_.complete = true;
        answer_.error.clear();
        end();
    }

    void fail(std::string error) {
        answer_.complete = false;
        answer_.error = std::move(error);
        answer_.body.clear();
        end();
    }

    void end() {
        close();
        if (!done_) return;
        auto done = std::move(done_);
        done_ = nullptr;
        done(std::move(answer_));
    }

    // Also ends the TLS relay, which is killed and reaped (TlsRelay::stop).
    void close() {
        timer_.cancel();
        error_code ignored;
        socket_.close(ignored);
        if (relay_) relay_->stop();
    }

    asio::io_context& io_;
    HttpRequest request_;
    tcp::socket socket_;
    std::shared_ptr<TlsRelay> relay_;  // https: once connected, the connection is the relay's
    asio::steady_timer timer_;
    HttpDone done_;
    std::string phase_ = "connecting";
    std::string wire_;   // the request as sent
    std::string head_;   // the answer up to the blank line (and what came with it)
    std::string piece_;  // one read of the body
    HttpHead::Framing framing_ = HttpHead::Framing::to_end;
    uint64_t content_length_ = 0;
    ChunkedBody chunked_;
    HttpAnswer answer_;
};

}  // namespace

std::shared_ptr<HttpExchange> start_http_exchange(asio::io_context& io, HttpRequest request,
                                                  Duration timeout, HttpDone done) {
    auto exchange = std::make_shared<Exchange>(io, std::move(request), std::move(done));
    exchange->start(timeout);
    return exchange;
}

}  // namespace infervisor
