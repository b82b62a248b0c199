// control_bench: round-trip figures of the control socket.
//
//   control-bench                 List with 100 fake workers, one client, then
//                                 1000 clients at once (5 rounds)
//   control-bench --serve PATH    serve 100 fake workers on PATH until Ctrl-C
//                                 (for trying infervisorctl by hand)
//
// The server runs on its own thread with one io_context, as in the daemon.
// Figures only; nothing is asserted.
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/signal_set.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "control/control_server.h"
#include "control/varlink_client.h"
#include "control/varlink_service.h"
#include "fake_supervisor.h"

using namespace infervisor;
using BenchClock = std::chrono::steady_clock;

namespace {

struct Stats {
    double p50, p99, max, mean;
};

Stats summarize(std::vector<double> us) {
    std::sort(us.begin(), us.end());
    double sum = 0;
    for (double v : us) sum += v;
    auto at = [&](double q) { return us[static_cast<std::size_t>(q * (us.size() - 1))]; };
    return {at(0.5), at(0.99), us.back(), sum / static_cast<double>(us.size())};
}

double micros(BenchClock::duration d) {
    return std::chrono::duration<double, std::micro>(d).count();
}

// Encodes replies as a session does, and keeps the last.
struct EncodingSink : ReplySink {
    void reply(const nlohmann::json& parameters, bool continues) override {
        bytes = encode_reply(parameters, continues);
    }
    void fail(std::string_view error, const nlohmann::json& parameters) override {
        bytes = encode_error(error, parameters);
    }
    void hold(Subscription) override {}
    std::string bytes;
};

// The server's share of a List: dispatch, JSON building and encoding.
void in_process(int calls) {
    testing::FakeSupervisor fake;
    fake.add_workers(100);
    VarlinkService service(fake, AccessPolicy{});
    std::vector<double> us;
    for (int i = 0; i < calls; ++i) {
        auto sink = std::make_shared<EncodingSink>();
        auto t0 = BenchClock::now();
        service.handle({"io.infervisor.supervisor.List", {}, false, false}, {0, 0, 1, {}}, sink);
        us.push_back(micros(BenchClock::now() - t0));
    }
    auto s = summarize(us);
    std::printf(
        "List, 100 workers, in-process (dispatch + encode, no socket): p50 %.0f us, "
        "p99 %.0f us\n",
        s.p50, s.p99);
}

void sequential(const std::filesystem::path& path, int calls) {
    auto client = VarlinkClient::connect(path);
    if (!client) return std::perror("connect");
    std::vector<double> us;
    std::size_t workers = 0, bytes = 0;
    for (int i = 0; i < calls; ++i) {
        auto t0 = BenchClock::now();
        auto reply = client->call("io.infervisor.supervisor.List");
        us.push_back(micros(BenchClock::now() - t0));
        if (!reply) return (void)std::fprintf(stderr, "%s\n", reply.error().message().c_str());
        workers = reply->parameters["workers"].size();
        bytes = encode_reply(reply->parameters, false).size();
    }
    auto s = summarize(us);
    std::printf(
        "List, %zu workers (%zu-byte reply), 1 client, %d calls: p50 %.0f us, p99 %.0f us, "
        "max %.0f us\n",
        workers, bytes, calls, s.p50, s.p99, s.max);
}

// One round: every client sends List, then all replies are collected.
std::vector<double> concurrent_round(std::vector<int>& fds, const std::string& request) {
    std::vector<BenchClock::time_point> sent(fds.size());
    std::vector<double> us(fds.size(), -1);
    std::vector<std::size_t> received(fds.size(), 0);
    for (std::size_t i = 0; i < fds.size(); ++i) {
        sent[i] = BenchClock::now();
        if (::send(fds[i], request.data(), request.size(), MSG_NOSIGNAL) < 0) std::perror("send");
    }
    std::size_t done = 0;
    std::vector<pollfd> pfds(fds.size());
    char buffer[65536];
    while (done < fds.size()) {
        for (std::size_t i = 0; i < fds.size(); ++i) pfds[i] = {us[i] < 0 ? fds[i] : -1, POLLIN, 0};
        if (::poll(pfds.data(), pfds.size(), 30000) <= 0) break;
        for (std::size_t i = 0; i < fds.size(); ++i) {
            if (!(pfds[i].revents & (POLLIN | POLLHUP))) continue;
            ssize_t n = ::recv(fds[i], buffer, sizeof buffer, 0);
            if (n <= 0) {
                us[i] = 1e9;  // closed: counted, never hidden
                ++done;
                continue;
            }
            received[i] += static_cast<std::size_t>(n);
            if (buffer[n - 1] == '\0') {
                us[i] = micros(BenchClock::now() - sent[i]);
                ++done;
            }
        }
    }
    return us;
}

void concurrent(const std::filesystem::path& path, int clients, int rounds) {
    std::vector<int> fds;
    for (int i = 0; i < clients; ++i) {
        auto c = VarlinkClient::connect(path);
        if (!c)
            return (void)std::fprintf(stderr, "client %d: %s\n", i, c.error().message().c_str());
        fds.push_back(::dup(c->fd()));
    }
    std::string request = encode_call({"io.infervisor.supervisor.List", {}, false, false});
    for (int r = 0; r < rounds; ++r) {
        auto t0 = BenchClock::now();
        auto us = concurrent_round(fds, request);
        double wall = micros(BenchClock::now() - t0);
        auto s = summarize(us);
        std::printf(
            "List, %d clients at once, round %d: all answered in %.1f ms (%.0f calls/s); "
            "per call p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
            clients, r + 1, wall / 1000, clients / (wall / 1e6), s.p50 / 1000, s.p99 / 1000,
            s.max / 1000);
    }
    for (int fd : fds) ::close(fd);
}

void raise_fd_limit(rlim_t want) {
    rlimit lim{};
    ::getrlimit(RLIMIT_NOFILE, &lim);
    lim.rlim_cur = std::min(std::max(lim.rlim_cur, want), lim.rlim_max);
    ::setrlimit(RLIMIT_NOFILE, &lim);
}

int serve(const std::filesystem::path& path) {
    boost::asio::io_context io;
    testing::FakeSupervisor fake;
    fake.add_workers(100);
    ControlServerOptions options;
    options.path = path;
    ControlServer server(io, fake, options);
    if (auto r = server.start(); !r) {
        std::fprintf(stderr, "%s\n", r.error().message().c_str());
        return 1;
    }
    boost::asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](auto, int) { server.stop(); });
    io.run();  // returns once stop() has closed everything
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 3 && std::strcmp(argv[1], "--serve") == 0) return serve(argv[2]);
    raise_fd_limit(8192);
    char dir_template[] = "/tmp/control-bench.XXXXXX";
    if (!::mkdtemp(dir_template)) return 1;
    std::filesystem::path path = std::filesystem::path(dir_template) / "io.infervisor";

    boost::asio::io_context io;
    testing::FakeSupervisor fake;
    fake.add_workers(100);
    ControlServerOptions options;
    options.path = path;
    options.max_connections = 2000;
    ControlServer server(io, fake, options);
    if (auto r = server.start(); !r) {
        std::fprintf(stderr, "%s\n", r.error().message().c_str());
        return 1;
    }
    std::thread loop([&] { io.run(); });

    in_process(2000);
    sequential(path, 2000);
    concurrent(path, 1000, 5);

    boost::asio::post(io, [&] { server.stop(); });
    loop.join();
    std::filesystem::remove_all(dir_template);
    return 0;
}
