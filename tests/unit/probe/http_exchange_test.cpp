// The one HTTP client against a local server that answers well, wrongly,
// too much or never: GET and POST, the three ways a body is delimited, the
// bound on the body, the deadline and cancel. Outcomes and their order are
// asserted, never how long anything took.
#include "probe/http_exchange.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <optional>

namespace infervisor {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;
using tcp = asio::ip::tcp;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Reads one whole request (its head and Content-Length bytes of body), then
// writes `answer` and closes the connection or holds it open.
class ScriptedServer {
  public:
    enum class After { close, hold };

    ScriptedServer(asio::io_context& io, std::string answer, After after = After::close)
        : acceptor_(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)),
          answer_(std::move(answer)),
          after_(after) {
        accept();
    }
    int port() const { return acceptor_.local_endpoint().port(); }
    const std::string& request() const { return request_; }
    bool answered() const { return answered_; }

  private:
    void accept() {
        acceptor_.async_accept([this](const error_code& ec, tcp::socket socket) {
            if (ec) return;
            auto s = std::make_shared<tcp::socket>(std::move(socket));
            held_.push_back(s);
            read(s);
        });
    }

    void read(std::shared_ptr<tcp::socket> s) {
        auto buffer = std::make_shared<std::array<char, 4096>>();
        s->async_read_some(asio::buffer(*buffer),
                           [this, s, buffer](const error_code& ec, size_t n) {
                               if (ec) return;
                               request_.append(buffer->data(), n);
                               if (request_complete()) return respond(s);
                               read(s);
                           });
    }

    bool request_complete() const {
        size_t end = request_.find("\r\n\r\n");
        if (end == std::string::npos) return false;
        size_t length = 0;
        if (size_t at = request_.find("Content-Length: "); at != std::string::npos && at < end)
            length = std::stoul(request_.substr(at + 16));
        return request_.size() >= end + 4 + length;
    }

    void respond(std::shared_ptr<tcp::socket> s) {
        if (answer_.empty()) return;  // silent: hold the connection, say nothing
        asio::async_write(*s, asio::buffer(answer_), [this, s](const error_code&, size_t) {
            answered_ = true;
            error_code ignored;
            if (after_ == After::close) s->close(ignored);
        });
    }

    tcp::acceptor acceptor_;
    std::string answer_;
    After after_;
    std::string request_;
    bool answered_ = false;
    std::vector<std::shared_ptr<tcp::socket>> held_;
};

class HttpExchangeTest : public ::testing::Test {
  protected:
    HttpRequest get(int port, std::string target = "/metrics", size_t max_body = 4096) {
        HttpRequest request;
        request.port = port;
        request.target = std::move(target);
        request.max_body = max_body;
        return request;
    }

    // Runs one exchange to its end and returns its answer.
    HttpAnswer run(HttpRequest request, Duration timeout = std::chrono::seconds(30)) {
        std::optional<HttpAnswer> answer;
        auto exchange = start_http_exchange(io, std::move(request), timeout, [&](HttpAnswer a) {
            EXPECT_FALSE(answer) << "done called twice";
            answer = std::move(a);
        });
        EXPECT_FALSE(answer) << "done called from within start";
        io.restart();  // an earlier exchange may have left the loop out of work
        while (!answer && io.run_one()) {
        }
        EXPECT_TRUE(answer);
        return answer.value_or(HttpAnswer{});
    }

    asio::io_context io;
};

TEST_F(HttpExchangeTest, GetReadsABodyOfContentLength) {
    // Held open: Content-Length, not the end of the connection, ends the body.
    ScriptedServer server(io,
                          "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
                          "Content-Length: 11\r\n\r\nhello world",
                          ScriptedServer::After::hold);
    HttpRequest request = get(server.port());
    request.headers = {{"Authorization", "Bearer s3cret"}};
    auto answer = run(request);
    EXPECT_TRUE(answer.complete) << answer.error;
    EXPECT_EQ(answer.status, 200);
    EXPECT_EQ(answer.content_type, "text/plain; version=0.0.4");
    EXPECT_EQ(answer.body, "hello world");
    EXPECT_THAT(server.request(), StartsWith("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:" +
                                             std::to_string(server.port()) + "\r\n"));
    EXPECT_THAT(server.request(), HasSubstr("\r\nAuthorization: Bearer s3cret\r\n"));
    EXPECT_THAT(server.request(), ::testing::Not(HasSubstr("Content-Length")));
    EXPECT_THAT(server.request(), ::testing::EndsWith("Connection: close\r\n\r\n"));
}

TEST_F(HttpExchangeTest, PostSendsItsBodyWithContentLength) {
    ScriptedServer server(
        io,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        "Content-Length: 40\r\n\r\n{\"id_slot\":0,\"filename\":\"slot-0.bin\"}\n\n\n");
    HttpRequest request = get(server.port(), "/slots/0?action=save");
    request.method = "POST";
    request.headers = {{"Content-Type", "application/json"}};
    request.body = R"({"filename":"slot-0.bin"})";
    auto answer = run(request);
    EXPECT_TRUE(answer.complete) << answer.error;
    EXPECT_EQ(answer.body, "{\"id_slot\":0,\"filename\":\"slot-0.bin\"}\n\n\n");
    EXPECT_THAT(server.request(), StartsWith("POST /slots/0?action=save HTTP/1.1\r\n"));
    EXPECT_THAT(server.request(), HasSubstr("\r\nContent-Type: application/json\r\n"));
    EXPECT_THAT(server.request(), HasSubstr("\r\nContent-Length: 25\r\n"));
    EXPECT_THAT(server.request(), ::testing::EndsWith("\r\n\r\n{\"filename\":\"slot-0.bin\"}"));

    ScriptedServer empty(io, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    HttpRequest wake = get(empty.port(), "/wake_up");
    wake.method = "POST";
    auto woken = run(wake);
    EXPECT_TRUE(woken.complete) << woken.error;
    EXPECT_EQ(woken.body, "");
    EXPECT_THAT(empty.request(), HasSubstr("\r\nContent-Length: 0\r\n"));
}

TEST_F(HttpExchangeTest, ChunkedBodyIsDechunked) {
    ScriptedServer server(io,
                          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                          "5\r\nhello\r\n6;x=y\r\n world\r\n0\r\n\r\n",
                          ScriptedServer::After::hold);
    auto answer = run(get(server.port()));
    EXPECT_TRUE(answer.complete) << answer.error;
    EXPECT_EQ(answer.body, "hello world");
}

TEST_F(HttpExchangeTest, WithoutLengthTheBodyEndsWithTheConnection) {
    ScriptedServer server(io, "HTTP/1.0 200 OK\r\n\r\n" + std::string(3000, 'm'));
    auto answer = run(get(server.port()));
    EXPECT_TRUE(answer.complete) << answer.error;
    EXPECT_EQ(answer.body, std::string(3000, 'm'));
}

TEST_F(HttpExchangeTest, ABodyOverTheLimitIsAnErrorNotATruncation) {
    ScriptedServer declared(io, "HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n",
                            ScriptedServer::After::hold);
    auto too_long = run(get(declared.port(), "/metrics", 4096));
    EXPECT_FALSE(too_long.complete);
    EXPECT_EQ(too_long.error, "body longer than 4096 bytes");
    EXPECT_EQ(too_long.body, "");

    ScriptedServer endless(io, "HTTP/1.0 200 OK\r\n\r\n" + std::string(5000, 'x'));
    auto to_end = run(get(endless.port(), "/metrics", 4096));
    EXPECT_FALSE(to_end.complete);
    EXPECT_EQ(to_end.error, "body longer than 4096 bytes");
    EXPECT_EQ(to_end.body, "");

    ScriptedServer chunks(io,
                          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                          "800\r\n" +
                              std::string(2048, 'a') + "\r\n801\r\n");
    auto chunked = run(get(chunks.port(), "/metrics", 4096));
    EXPECT_FALSE(chunked.complete);
    EXPECT_EQ(chunked.error, "chunked body: body longer than 4096 bytes");
}

TEST_F(HttpExchangeTest, MalformedChunksAndFramingsAreErrors) {
    ScriptedServer bad_size(io, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n");
    auto answer = run(get(bad_size.port()));
    EXPECT_FALSE(answer.complete);
    EXPECT_EQ(answer.status, 200);  // the status line was read
    EXPECT_THAT(answer.error, StartsWith("chunked body: "));

    ScriptedServer cut(io, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel");
    EXPECT_EQ(run(get(cut.port())).error, "connection closed within the body");

    ScriptedServer short_body(io, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
    EXPECT_EQ(run(get(short_body.port())).error, "connection closed within the body");

    ScriptedServer gzip(io, "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nxx");
    EXPECT_EQ(run(get(gzip.port())).error, "unsupported Transfer-Encoding 'gzip'");
}

TEST_F(HttpExchangeTest, WithoutMaxBodyTheBodyIsNotRead) {
    // A health probe's exchange: the head is enough, whatever the framing says.
    ScriptedServer server(io, "HTTP/1.1 503 Loading\r\nContent-Length: 99999999\r\n\r\n",
                          ScriptedServer::After::hold);
    auto answer = run(get(server.port(), "/health", 0));
    EXPECT_TRUE(answer.complete) << answer.error;
    EXPECT_EQ(answer.status, 503);
    EXPECT_EQ(answer.body, "");

    ScriptedServer no_content(io, "HTTP/1.1 204 No Content\r\n\r\n", ScriptedServer::After::hold);
    auto empty = run(get(no_content.port()));
    EXPECT_TRUE(empty.complete) << empty.error;
    EXPECT_EQ(empty.status, 204);
}

TEST_F(HttpExchangeTest, ASilentServerFailsAtTheDeadline) {
    ScriptedServer silent(io, "");
    auto answer = run(get(silent.port()), std::chrono::milliseconds(200));
    EXPECT_FALSE(answer.complete);
    EXPECT_EQ(answer.error, "no answer within 200ms (reading the answer)");

    ScriptedServer stalls(io, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc",
                          ScriptedServer::After::hold);
    auto stalled = run(get(stalls.port()), std::chrono::milliseconds(200));
    EXPECT_FALSE(stalled.complete);
    EXPECT_EQ(stalled.error, "no answer within 200ms (reading the body)");
    EXPECT_EQ(stalled.body, "");
}

TEST_F(HttpExchangeTest, ARequestThatCannotBeSentFailsWithoutASocket) {
    HttpRequest injected = get(1);
    injected.headers = {{"Authorization", "Bearer a\r\nX-Evil: 1"}};
    EXPECT_EQ(run(injected).error, "bad header line 'Authorization'");
    HttpRequest named = get(1);
    named.host = "localhost";
    EXPECT_EQ(run(named).error, "bad address 'localhost'");
    HttpRequest target = get(1, "/a b");
    EXPECT_EQ(run(target).error, "bad request target");
    HttpRequest put = get(1);
    put.method = "PUT";
    EXPECT_EQ(run(put).error, "method must be GET or POST");
}

TEST_F(HttpExchangeTest, ARefusedConnectionSaysSo) {
    std::optional<int> port;
    {
        ScriptedServer gone(io, "");
        port = gone.port();
    }
    auto answer = run(get(*port));
    EXPECT_FALSE(answer.complete);
    EXPECT_THAT(answer.error, StartsWith("connect: "));
}

TEST_F(HttpExchangeTest, CancelledExchangeNeverCallsBack) {
    ScriptedServer silent(io, "");
    bool called = false;
    auto exchange = start_http_exchange(io, get(silent.port()), std::chrono::milliseconds(50),
                                        [&](HttpAnswer) { called = true; });
    io.poll();
    exchange->cancel();
    io.run_for(std::chrono::milliseconds(300));
    EXPECT_FALSE(called);
}

}  // namespace
}  // namespace infervisor
