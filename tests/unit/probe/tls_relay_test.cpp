// https exchanges through the TLS relay (probe/tls_relay.h, the program
// daemon/tls-relay/ built with the tests): a missing relay, a server that
// never answers the handshake, a cancel mid-exchange, answers too long, and
// what the relay runs as. Every test ends with the relay reaped: no child of
// the test process is left. Outcomes and their order are asserted, never how
// long anything took (loops that wait have a cap on turns, not on time).
#include "probe/tls_relay.h"

#include <dirent.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/write.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>

#include "probe/http_exchange.h"
#include "tls_listener.h"

namespace infervisor {
namespace {

namespace asio = boost::asio;
using Behaviour = TlsListener::Behaviour;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Whether this process has a child, running or exited but not yet reaped
// (WNOWAIT: asking reaps nothing).
bool has_children() {
    siginfo_t info{};
    return ::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) == 0;
}

// The pids of this process's children, from every thread's list.
std::vector<pid_t> children() {
    std::vector<pid_t> pids;
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
        std::ifstream in(task.path() / "children");
        pid_t pid;
        while (in >> pid) pids.push_back(pid);
    }
    return pids;
}

// "Key:\tvalue" of /proc/PID/status.
std::string status_field(pid_t pid, const std::string& key) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(in, line);)
        if (line.starts_with(key + ":")) {
            std::string value = line.substr(key.size() + 1);
            value.erase(0, value.find_first_not_of(" \t"));
            return value;
        }
    return {};
}

std::string read_line(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

class TlsRelayTest : public ::testing::Test {
  protected:
    void SetUp() override {
        set_tls_relay_program(INFERVISOR_TEST_TLS_RELAY);
        ASSERT_FALSE(has_children()) << "a child of an earlier test is left";
    }
    void TearDown() override { set_tls_relay_program(INFERVISOR_TEST_TLS_RELAY); }

    HttpRequest https_get(int port, size_t max_body = 0) {
        HttpRequest request;
        request.port = port;
        request.tls = true;
        request.target = "/health";
        request.max_body = max_body;
        return request;
    }

    // Runs one exchange to its end.
    HttpAnswer exchange(HttpRequest request, Duration timeout = std::chrono::seconds(30)) {
        std::optional<HttpAnswer> answer;
        auto e = start_http_exchange(io, std::move(request), timeout, [&](HttpAnswer a) {
            EXPECT_FALSE(answer) << "done called twice";
            answer = std::move(a);
        });
        EXPECT_FALSE(answer) << "done called from within start";
        while (!answer && io.run_one()) {
        }
        EXPECT_TRUE(answer);
        return answer.value_or(HttpAnswer{});
    }

    // Turns the loop until `done` holds, at most some thousands of turns
    // (each waits at most 10ms for something to do).
    bool run_until(const std::function<bool()>& done) {
        for (int turn = 0; turn < 3000 && !done(); ++turn)
            io.run_one_for(std::chrono::milliseconds(10));
        return done();
    }

    asio::io_context io;
};

TEST_F(TlsRelayTest, AnAnswerComesThroughTheRelayAndItIsReaped) {
    TlsListener l(io, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nto the end");
    auto answer = exchange(https_get(l.port(), 1024));
    EXPECT_TRUE(answer.complete) << answer.error;
    EXPECT_EQ(answer.status, 200);
    EXPECT_EQ(answer.content_type, "text/plain");
    // No Content-Length: the body ends with the connection, which the server
    // closed without close_notify.
    EXPECT_EQ(answer.body, "to the end");
    EXPECT_THAT(l.request(), StartsWith("GET /health HTTP/1.1\r\n"));
    EXPECT_TRUE(run_until([] { return !has_children(); }));
}

TEST_F(TlsRelayTest, AMissingRelayIsAClearErrorNamingItsPath) {
    set_tls_relay_program("/nonexistent/infervisor-tls-relay");
    TlsListener l(io, "HTTP/1.1 200 OK\r\n\r\n");
    auto answer = exchange(https_get(l.port()));
    EXPECT_FALSE(answer.complete);
    EXPECT_EQ(answer.error,
              "TLS relay /nonexistent/infervisor-tls-relay: No such file or directory");
    EXPECT_FALSE(has_children());
}

TEST_F(TlsRelayTest, AServerThatNeverAnswersTheHandshakeFailsAtTheDeadline) {
    TlsListener l(io, {}, Behaviour::no_handshake);
    auto answer = exchange(https_get(l.port()), std::chrono::milliseconds(200));
    EXPECT_FALSE(answer.complete);
    EXPECT_EQ(answer.error, "no answer within 200ms (TLS handshake)");
    EXPECT_TRUE(run_until([] { return !has_children(); })) << "the relay was not reaped";
}

TEST_F(TlsRelayTest, ACancelMidExchangeKillsAndReapsTheRelay) {
    TlsListener l(io, {}, Behaviour::silent);
    bool called = false;
    auto e = start_http_exchange(io, https_get(l.port()), std::chrono::seconds(60),
                                 [&](HttpAnswer) { called = true; });
    // Mid-exchange: the request went through the relay, the answer is due.
    ASSERT_TRUE(run_until([&] { return !l.request().empty(); }));
    ASSERT_EQ(children().size(), 1u) << "the relay runs";
    e->cancel();
    EXPECT_TRUE(run_until([] { return !has_children(); })) << "the relay was not reaped";
    EXPECT_TRUE(children().empty());
    EXPECT_FALSE(called);
}

TEST_F(TlsRelayTest, TheRelayRunsUnprivilegedWithItsTwoFdsAndNoMore) {
    TlsListener l(io, {}, Behaviour::silent);
    auto e =
        start_http_exchange(io, https_get(l.port()), std::chrono::seconds(60), [](HttpAnswer) {});
    ASSERT_TRUE(run_until([&] { return !l.request().empty(); }));
    auto pids = children();
    ASSERT_EQ(pids.size(), 1u);
    const std::string proc = "/proc/" + std::to_string(pids[0]);
    std::vector<std::string> fds;
    for (const auto& fd : std::filesystem::directory_iterator(proc + "/fd"))
        fds.push_back(fd.path().filename().string());
    std::sort(fds.begin(), fds.end());
    EXPECT_EQ(fds, (std::vector<std::string>{"0", "1", "2"}));
    EXPECT_EQ(std::filesystem::read_symlink(proc + "/fd/2").string(), "/dev/null");
    EXPECT_EQ(status_field(pids[0], "NoNewPrivs"), "1");
    EXPECT_EQ(read_line(proc + "/oom_score_adj"), "1000");
    if (::geteuid() == 0) {
        EXPECT_EQ(status_field(pids[0], "Uid"), "65534\t65534\t65534\t65534");
        EXPECT_EQ(status_field(pids[0], "Gid"), "65534\t65534\t65534\t65534");
        EXPECT_EQ(status_field(pids[0], "Groups"), "");
    }
    std::ifstream limits(proc + "/limits");
    std::stringstream text;
    text << limits.rdbuf();
    EXPECT_THAT(text.str(), HasSubstr("Max address space         67108864             67108864"));
    e->cancel();
    EXPECT_TRUE(run_until([] { return !has_children(); }));
}

TEST_F(TlsRelayTest, AnEndlessBodyIsCutAtItsBound) {
    TlsListener l(io, "HTTP/1.1 200 OK\r\n\r\n", Behaviour::endless_body);
    auto answer = exchange(https_get(l.port(), 64 * 1024));
    EXPECT_FALSE(answer.complete);
    EXPECT_EQ(answer.error, "body longer than 65536 bytes");
    EXPECT_TRUE(answer.body.empty());
    EXPECT_TRUE(run_until([] { return !has_children(); }));
}

TEST_F(TlsRelayTest, EndlessHeadersAreCutAtTheCap) {
    TlsListener l(io, "HTTP/1.1 200 OK\r\n", Behaviour::endless_body);
    auto answer = exchange(https_get(l.port()));
    EXPECT_FALSE(answer.complete);
    EXPECT_EQ(answer.error, "status line and headers longer than 16K");
    EXPECT_TRUE(run_until([] { return !has_children(); }));
}

TEST_F(TlsRelayTest, AHandshakeWithAPlainServerFailsWithTheTlsReason) {
    // A TCP listener that answers a ClientHello with plain text.
    asio::ip::tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
    asio::ip::tcp::socket peer(io);
    std::string said = "HTTP/1.1 400 Bad Request\r\n\r\n";
    acceptor.async_accept(peer, [&](const boost::system::error_code& ec) {
        if (!ec) asio::async_write(peer, asio::buffer(said), [](auto, auto) {});
    });
    auto answer = exchange(https_get(acceptor.local_endpoint().port()));
    EXPECT_FALSE(answer.complete);
    EXPECT_THAT(answer.error, StartsWith("TLS handshake: "));
    EXPECT_THAT(answer.error, ::testing::Not(HasSubstr("TLS relay")));
    EXPECT_TRUE(run_until([] { return !has_children(); }));
}

}  // namespace
}  // namespace infervisor
