// The TCP and HTTP probes against a local listener that answers well,
// slowly, wrongly or never. Outcomes and their order are asserted, never
// how long anything took.
#include "probe/socket_probe.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include "probe/tls_relay.h"
#include "tls_listener.h"

namespace infervisor {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;
using tcp = asio::ip::tcp;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// How the listener treats each connection.
enum class Behaviour { answer, drip, endless_headers, silent, close_at_once };

class Listener {
  public:
    Listener(asio::io_context& io, Behaviour behaviour, std::string answer = {})
        : io_(io),
          acceptor_(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)),
          behaviour_(behaviour),
          answer_(std::move(answer)) {
        accept();
    }
    int port() const { return acceptor_.local_endpoint().port(); }
    const std::string& request() const { return request_; }
    void close() {
        error_code ignored;
        acceptor_.close(ignored);
        for (auto& s : held_) s->close(ignored);
    }

  private:
    void accept() {
        acceptor_.async_accept([this](const error_code& ec, tcp::socket socket) {
            if (ec) return;
            auto s = std::make_shared<tcp::socket>(std::move(socket));
            held_.push_back(s);
            serve(s);
            accept();
        });
    }

    void serve(std::shared_ptr<tcp::socket> s) {
        if (behaviour_ == Behaviour::close_at_once) return s->close();
        auto buffer = std::make_shared<std::array<char, 4096>>();
        s->async_read_some(asio::buffer(*buffer),
                           [this, s, buffer](const error_code& ec, size_t n) {
                               if (ec) return;
                               request_.append(buffer->data(), n);
                               respond(s);
                           });
    }

    void respond(std::shared_ptr<tcp::socket> s) {
        switch (behaviour_) {
            case Behaviour::answer:
                return asio::async_write(*s, asio::buffer(answer_),
                                         [](const error_code&, size_t) {});
            case Behaviour::drip:
                return drip(s, 0);
            case Behaviour::endless_headers:
                return flood(s, std::make_shared<std::string>("HTTP/1.1 200 OK\r\n"));
            default:
                return;  // silent: hold the connection, say nothing
        }
    }

    void drip(std::shared_ptr<tcp::socket> s, size_t at) {
        if (at == answer_.size()) return;
        asio::async_write(
            *s, asio::buffer(answer_.data() + at, 1), [this, s, at](const error_code& ec, size_t) {
                if (ec) return;
                auto t = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(2));
                t->async_wait([this, s, at, t](const error_code&) { drip(s, at + 1); });
            });
    }

    void flood(std::shared_ptr<tcp::socket> s, std::shared_ptr<std::string> chunk) {
        asio::async_write(*s, asio::buffer(*chunk), [this, s](const error_code& ec, size_t) {
            if (ec) return;  // the probe hung up
            flood(s, std::make_shared<std::string>(4096, 'x'));
        });
    }

    asio::io_context& io_;
    tcp::acceptor acceptor_;
    Behaviour behaviour_;
    std::string answer_;
    std::string request_;
    std::vector<std::shared_ptr<tcp::socket>> held_;
};

class SocketProbeTest : public ::testing::Test {
  protected:
    // https goes through the relay built with the tests.
    void SetUp() override { set_tls_relay_program(INFERVISOR_TEST_TLS_RELAY); }

    ProbeSpec http(int port, std::string path = "/health") {
        ProbeSpec spec;
        spec.kind = ProbeKind::http;
        spec.port = port;
        spec.path = std::move(path);
        return spec;
    }

    // Runs one attempt to its end and returns what it said.
    ProbeOutcome run(const ProbeSpec& spec, Duration timeout = std::chrono::seconds(30)) {
        std::optional<ProbeOutcome> outcome;
        auto attempt = start_socket_probe(io, spec, timeout, [&](ProbeOutcome o) {
            EXPECT_FALSE(outcome) << "done called twice";
            outcome = std::move(o);
        });
        EXPECT_FALSE(outcome) << "done called from within start";
        while (!outcome && io.run_one()) {
        }
        EXPECT_TRUE(outcome);
        return outcome.value_or(ProbeOutcome{});
    }

    asio::io_context io;
};

TEST_F(SocketProbeTest, HttpStatusInRangePassesAndTheRequestIsWellFormed) {
    Listener l(io, Behaviour::answer, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    auto outcome = run(http(l.port()));
    EXPECT_TRUE(outcome.passed) << outcome.detail;
    EXPECT_EQ(outcome.detail, "HTTP 200");
    EXPECT_EQ(outcome.http_status, 200);
    EXPECT_THAT(
        l.request(),
        StartsWith("GET /health HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(l.port()) + "\r\n"));
    EXPECT_THAT(l.request(), HasSubstr("Connection: close\r\n\r\n"));
}

TEST_F(SocketProbeTest, HttpStatusOutOfRangeFails) {
    Listener l(io, Behaviour::answer, "HTTP/1.1 503 Loading\r\n\r\n");
    auto outcome = run(http(l.port()));
    EXPECT_FALSE(outcome.passed);
    EXPECT_EQ(outcome.detail, "HTTP 503");
    EXPECT_EQ(outcome.http_status, 503);
    ProbeSpec wide = http(l.port());
    wide.status_max = 599;
    EXPECT_TRUE(run(wide).passed);
}

TEST_F(SocketProbeTest, GarbageFails) {
    Listener l(io, Behaviour::answer, "SSH-2.0-OpenSSH_9.2\r\n");
    auto outcome = run(http(l.port()));
    EXPECT_FALSE(outcome.passed);
    EXPECT_THAT(outcome.detail, HasSubstr("not an HTTP/1.x status line"));
    EXPECT_FALSE(outcome.http_status);
}

TEST_F(SocketProbeTest, EndlessHeadersAreCutAtTheCap) {
    Listener l(io, Behaviour::endless_headers);
    auto outcome = run(http(l.port()));
    EXPECT_FALSE(outcome.passed);
    EXPECT_EQ(outcome.detail, "status line and headers longer than 16K");
}

TEST_F(SocketProbeTest, SlowButInTimeAnswerPasses) {
    Listener l(io, Behaviour::drip, "HTTP/1.1 204 No Content\r\nA: b\r\n\r\n");
    auto outcome = run(http(l.port()));
    EXPECT_TRUE(outcome.passed) << outcome.detail;
    EXPECT_EQ(outcome.http_status, 204);
}

TEST_F(SocketProbeTest, ASilentServerFailsAtTheDeadline) {
    Listener l(io, Behaviour::silent);
    auto outcome = run(http(l.port()), std::chrono::milliseconds(200));
    EXPECT_FALSE(outcome.passed);
    EXPECT_EQ(outcome.detail, "no answer within 200ms (reading the answer)");
}

TEST_F(SocketProbeTest, ADripSlowerThanTheDeadlineFails) {
    Listener l(io, Behaviour::drip, "HTTP/1.1 200 OK\r\n" + std::string(5000, 'x'));
    auto outcome = run(http(l.port()), std::chrono::milliseconds(100));
    EXPECT_FALSE(outcome.passed);
    EXPECT_THAT(outcome.detail, StartsWith("no answer within 100ms"));
}

TEST_F(SocketProbeTest, ClosedWithoutAnswerFails) {
    Listener l(io, Behaviour::close_at_once);
    auto outcome = run(http(l.port()));
    EXPECT_FALSE(outcome.passed);
    EXPECT_THAT(outcome.detail, ::testing::AnyOf(HasSubstr("closed without an answer"),
                                                 HasSubstr("reading the answer"),
                                                 HasSubstr("sending the request")));
}

TEST_F(SocketProbeTest, HttpsProbeSpeaksTlsAndJudgesTheStatus) {
    TlsListener l(io, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    ProbeSpec spec = http(l.port());
    spec.tls = true;
    auto outcome = run(spec);
    EXPECT_TRUE(outcome.passed) << outcome.detail;
    EXPECT_EQ(outcome.detail, "HTTP 200");
    EXPECT_THAT(l.request(), StartsWith("GET /health HTTP/1.1\r\n"));

    TlsListener loading(io, "HTTP/1.1 503 Loading\r\n\r\n");
    spec.port = loading.port();
    auto failed = run(spec);
    EXPECT_FALSE(failed.passed);
    EXPECT_EQ(failed.detail, "HTTP 503");
}

TEST_F(SocketProbeTest, HttpsProbeOfAPlainHttpServerFailsInTheHandshake) {
    Listener l(io, Behaviour::answer, "HTTP/1.1 400 Bad Request\r\n\r\n");
    ProbeSpec spec = http(l.port());
    spec.tls = true;
    auto outcome = run(spec);
    EXPECT_FALSE(outcome.passed);
    EXPECT_THAT(outcome.detail, StartsWith("TLS handshake: ")) << outcome.detail;
    EXPECT_FALSE(outcome.http_status);
}

TEST_F(SocketProbeTest, HttpsProbeOfASilentServerFailsAtTheDeadlineInTheHandshake) {
    Listener l(io, Behaviour::silent);
    ProbeSpec spec = http(l.port());
    spec.tls = true;
    auto outcome = run(spec, std::chrono::milliseconds(200));
    EXPECT_FALSE(outcome.passed);
    EXPECT_EQ(outcome.detail, "no answer within 200ms (TLS handshake)");
}

TEST_F(SocketProbeTest, TcpConnectPassesAndRefusedFails) {
    Listener l(io, Behaviour::silent);
    ProbeSpec spec;
    spec.kind = ProbeKind::tcp;
    spec.port = l.port();
    auto outcome = run(spec);
    EXPECT_TRUE(outcome.passed);
    EXPECT_EQ(outcome.detail, "connected");
    l.close();
    auto refused = run(spec);
    EXPECT_FALSE(refused.passed);
    EXPECT_THAT(refused.detail, StartsWith("connect: "));
    EXPECT_THAT(refused.detail, HasSubstr("refused"));
}

TEST_F(SocketProbeTest, CancelledAttemptNeverCallsBack) {
    Listener l(io, Behaviour::silent);
    bool called = false;
    auto attempt = start_socket_probe(io, http(l.port()), std::chrono::milliseconds(50),
                                      [&](ProbeOutcome) { called = true; });
    io.poll();
    attempt->cancel();
    io.run_for(std::chrono::milliseconds(300));
    EXPECT_FALSE(called);
}

}  // namespace
}  // namespace infervisor
