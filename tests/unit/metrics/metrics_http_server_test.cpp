#include "metrics/metrics_http_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <thread>
#include <vector>

namespace infervisor {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::StartsWith;

MetricsHttpServer::Render fixed(std::string body) {
    auto text = std::make_shared<const std::string>(std::move(body));
    return [text] { return text; };
}

TEST(MetricsHttpReply, ServesMetricsAndNothingElse) {
    auto render = fixed("up 1\n");
    std::string ok = metrics_http_reply("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", render);
    EXPECT_THAT(ok, StartsWith("HTTP/1.0 200 OK\r\n"));
    EXPECT_THAT(ok, HasSubstr("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
    EXPECT_THAT(ok, HasSubstr("Content-Length: 5\r\n"));
    EXPECT_THAT(ok, EndsWith("\r\n\r\nup 1\n"));
    EXPECT_THAT(metrics_http_reply("GET /metrics?x=1 HTTP/1.0\r\n\r\n", render),
                StartsWith("HTTP/1.0 200"));
    EXPECT_THAT(metrics_http_reply("HEAD /metrics HTTP/1.0\r\n\r\n", render),
                EndsWith("Connection: close\r\n\r\n"));
    EXPECT_THAT(metrics_http_reply("GET / HTTP/1.0\r\n\r\n", render), StartsWith("HTTP/1.0 404"));
    EXPECT_THAT(metrics_http_reply("POST /metrics HTTP/1.0\r\n\r\n", render),
                StartsWith("HTTP/1.0 405"));
    EXPECT_THAT(metrics_http_reply("GET /metrics\r\n\r\n", render), StartsWith("HTTP/1.0 400"));
    EXPECT_THAT(metrics_http_reply("\r\n\r\n", render), StartsWith("HTTP/1.0 400"));
}

// A real server on the loopback, with clients in another thread; the loop
// runs in this one until the clients are done.
class MetricsHttpServerTest : public ::testing::Test {
  protected:
    void SetUp() override {
        server_ = std::make_unique<MetricsHttpServer>(io_, fixed("infervisor_up 1\n"));
        auto r = server_->start(tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
        if (!r) GTEST_SKIP() << "no loopback TCP here: " << r.error().message();
        port_ = server_->local_endpoint().port();
    }

    // Runs `client` in a thread while the loop serves; returns when it is done.
    void serve_while(std::function<void()> client) {
        std::atomic<bool> done = false;
        std::thread t([&] {
            client();
            done = true;
        });
        while (!done) io_.run_for(std::chrono::milliseconds(20));
        t.join();
        io_.restart();
    }

    std::string exchange(std::string_view request) {
        asio::io_context io;
        tcp::socket s(io);
        s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_));
        asio::write(s, asio::buffer(request));
        std::string reply;
        boost::system::error_code ec;
        asio::read(s, asio::dynamic_buffer(reply), ec);  // until the server closes
        return reply;
    }

    asio::io_context io_;
    std::unique_ptr<MetricsHttpServer> server_;
    uint16_t port_ = 0;
};

TEST_F(MetricsHttpServerTest, AnswersAScrapeAndCloses) {
    std::string reply;
    serve_while([&] { reply = exchange("GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n"); });
    EXPECT_THAT(reply, StartsWith("HTTP/1.0 200 OK\r\n"));
    EXPECT_THAT(reply, EndsWith("\r\n\r\ninfervisor_up 1\n"));
}

TEST_F(MetricsHttpServerTest, AnOversizedRequestIsRefusedNotBuffered) {
    std::string reply;
    std::string huge =
        "GET /metrics HTTP/1.0\r\nX: " + std::string(MetricsHttpServer::kMaxRequest * 2, 'a') +
        "\r\n\r\n";
    serve_while([&] { reply = exchange(huge); });
    EXPECT_THAT(reply, StartsWith("HTTP/1.0 400"));
}

TEST_F(MetricsHttpServerTest, ServesOthersWhileOneClientSaysNothing) {
    asio::io_context client_io;
    tcp::socket silent(client_io);  // open until the end of the test
    std::string reply;
    serve_while([&] {
        silent.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_));
        asio::write(silent, asio::buffer(std::string_view("GET /met")));  // and then nothing
        reply = exchange("GET /metrics HTTP/1.0\r\n\r\n");
    });
    EXPECT_THAT(reply, StartsWith("HTTP/1.0 200"));
    EXPECT_EQ(server_->open_connections(), 1u);  // the silent one, until its deadline
}

// Issue 26, defect 10: any local user holding kMaxConnections idle
// connections (over loopback everyone is 127.0.0.1) kept Prometheus out:
// the scrape was closed at once. Now the oldest idle connection gives way.
TEST_F(MetricsHttpServerTest, IdleConnectionsCannotStarveTheScraper) {
    asio::io_context client_io;
    std::vector<tcp::socket> idle;
    std::string reply;
    boost::system::error_code oldest_ec;
    serve_while([&] {
        for (size_t i = 0; i < MetricsHttpServer::kMaxConnections; ++i) {
            idle.emplace_back(client_io);
            idle.back().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_));
        }
        // Until the server holds them all, a scrape would get a slot anyway.
        while (server_->open_connections() < MetricsHttpServer::kMaxConnections)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        reply = exchange("GET /metrics HTTP/1.0\r\n\r\n");
        char byte;
        idle.front().read_some(asio::buffer(&byte, 1), oldest_ec);  // closed by the server
    });
    EXPECT_THAT(reply, StartsWith("HTTP/1.0 200"));
    EXPECT_EQ(oldest_ec, asio::error::eof);
}

TEST_F(MetricsHttpServerTest, StopClosesTheListeningSocket) {
    server_->stop();
    asio::io_context io;
    tcp::socket s(io);
    boost::system::error_code ec;
    s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_), ec);
    EXPECT_TRUE(ec);
}

}  // namespace
}  // namespace infervisor
