#include "probe/socket_probe.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "base/units.h"
#include "probe/http_exchange.h"

namespace infervisor {

namespace asio = boost::asio;
using boost::system::error_code;
using tcp = asio::ip::tcp;

namespace {

// kind tcp: passes once the connection is made.
class TcpConnectProbe final : public ProbeAttempt,
                              public std::enable_shared_from_this<TcpConnectProbe> {
  public:
    TcpConnectProbe(asio::io_context& io, const ProbeSpec& spec, ProbeDone done)
        : spec_(spec), socket_(io), timer_(io), done_(std::move(done)) {}

    void start(Duration timeout) {
        error_code ec;
        auto address = asio::ip::make_address(spec_.host, ec);
        if (ec) return post_finish(false, "bad address '" + spec_.host + "'");
        timer_.expires_after(timeout);
        timer_.async_wait([self = shared_from_this(), timeout](const error_code& e) {
            if (!e)
                self->finish(false,
                             "no answer within " + format_duration(timeout) + " (connecting)");
        });
        tcp::endpoint endpoint(address, static_cast<unsigned short>(spec_.port));
        socket_.async_connect(endpoint, [self = shared_from_this()](const error_code& e) {
            if (e) return self->finish(false, "connect: " + e.message());
            self->finish(true, "connected");
        });
    }

    void cancel() override {
        done_ = nullptr;
        close();
    }

  private:
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
        done(ProbeOutcome{passed, std::move(detail), std::nullopt});
    }

    void close() {
        timer_.cancel();
        error_code ignored;
        socket_.close(ignored);
    }

    ProbeSpec spec_;
    tcp::socket socket_;
    asio::steady_timer timer_;
    ProbeDone done_;
};

// kind http: a GET whose status is judged; the body is not read.
class HttpProbe final : public ProbeAttempt {
  public:
    HttpProbe(asio::io_context& io, const ProbeSpec& spec, Duration timeout, ProbeDone done) {
        HttpRequest request;
        request.host = spec.host;
        request.port = spec.port;
        request.tls = spec.tls;
        request.target = spec.path;
        const int status_min = spec.status_min;
        const int status_max = spec.status_max;
        exchange_ = start_http_exchange(
            io, std::move(request), timeout,
            [done = std::move(done), status_min, status_max](HttpAnswer answer) {
                if (!answer.complete) return done(ProbeOutcome{false, answer.error, std::nullopt});
                bool passed = answer.status >= status_min && answer.status <= status_max;
                done(ProbeOutcome{passed, "HTTP " + std::to_string(answer.status), answer.status});
            });
    }

    void cancel() override { exchange_->cancel(); }

  private:
    std::shared_ptr<HttpExchange> exchange_;
};

}  // namespace

std::shared_ptr<ProbeAttempt> start_socket_probe(asio::io_context& io, const ProbeSpec& spec,
                                                 Duration timeout, ProbeDone done) {
    if (spec.kind == ProbeKind::http)
        return std::make_shared<HttpProbe>(io, spec, timeout, std::move(done));
    auto probe = std::make_shared<TcpConnectProbe>(io, spec, std::move(done));
    probe->start(timeout);
    return probe;
}

}  // namespace infervisor
