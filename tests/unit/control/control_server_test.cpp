#include "control/control_server.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <thread>

#include "control/varlink_client.h"
#include "control/varlink_errors.h"
#include "raw_client.h"
#include "server_fixture.h"

namespace infervisor {
namespace {

using namespace std::string_literals;
using nlohmann::json;
using testing::FakeSupervisor;
using testing::RawClient;
using testing::ServerFixture;
namespace err = varlink_error;

json parsed(const std::optional<std::string>& message) {
    return message ? json::parse(*message) : json();
}

std::string call_bytes(const std::string& method, json params = json::object()) {
    return encode_call({method, std::move(params), false, false});
}

TEST(ControlServer, AnswersOverARealSocket) {
    ServerFixture server;
    auto client = VarlinkClient::connect(server.socket_path());
    ASSERT_TRUE(client.ok()) << client.error().message();
    auto reply = client->call("io.infervisor.supervisor.List");
    ASSERT_TRUE(reply.ok()) << reply.error().message();
    EXPECT_EQ(reply->parameters["workers"][0]["name"], "llama");
    EXPECT_EQ(reply->parameters["workers"][0]["main_pid"], 4242);
    auto again = client->call("io.infervisor.supervisor.Get", {{"name", "whisper"}});
    EXPECT_EQ(again->parameters["worker"]["state"], "stopped");
}

TEST(ControlServer, MalformedJsonGetsAnErrorThenTheConnectionCloses) {
    ServerFixture server;
    RawClient client(server.socket_path());
    ASSERT_TRUE(client.send("{\"method\": nope\0"s));
    auto reply = parsed(client.read_message());
    EXPECT_EQ(reply["error"], err::kProtocolError);
    EXPECT_TRUE(client.closed_by_peer());
}

TEST(ControlServer, OversizedMessageClosesTheConnection) {
    ControlServerOptions options;
    options.max_message_size = 4096;
    ServerFixture server(options);
    RawClient client(server.socket_path());
    client.send(std::string(8192, ' '));  // may fail midway when closed: fine
    EXPECT_TRUE(client.closed_by_peer());
    // A message of exactly the limit is fine.
    RawClient fits(server.socket_path());
    std::string call = call_bytes("io.infervisor.supervisor.List");
    call.insert(call.size() - 2, 4096 - (call.size() - 1), ' ');  // pad inside the object
    ASSERT_EQ(call.size(), 4097u);
    ASSERT_TRUE(fits.send(call));
    EXPECT_TRUE(parsed(fits.read_message()).contains("parameters"));
}

TEST(ControlServer, UnknownMethodsAndBadParametersKeepTheConnection) {
    ServerFixture server;
    RawClient client(server.socket_path());
    client.send(call_bytes("io.infervisor.supervisor.Explode"));
    EXPECT_EQ(parsed(client.read_message())["error"], err::kMethodNotFound);
    client.send(call_bytes("io.infervisor.supervisor.Get", {{"name", 5}}));
    auto bad = parsed(client.read_message());
    EXPECT_EQ(bad["error"], err::kInvalidParameter);
    EXPECT_EQ(bad["parameters"]["parameter"], "name");
    client.send(call_bytes("io.infervisor.supervisor.List"));
    EXPECT_TRUE(parsed(client.read_message()).contains("parameters"));
}

TEST(ControlServer, PipelinedCallsAreAnsweredInOrder) {
    ServerFixture server;
    RawClient client(server.socket_path());
    client.send(
        call_bytes("io.infervisor.supervisor.Get", {{"name", "llama"}}) +
        call_bytes("io.infervisor.supervisor.Get", {{"name", "nope"}}) +
        encode_call({"io.infervisor.supervisor.Stop", {{"names", {"whisper"}}}, false, true}) +
        call_bytes("io.infervisor.supervisor.List"));
    EXPECT_EQ(parsed(client.read_message())["parameters"]["worker"]["name"], "llama");
    EXPECT_EQ(parsed(client.read_message())["error"], err::kWorkerNotFound);
    // The oneway Stop got no reply but was done before the List.
    EXPECT_EQ(parsed(client.read_message())["parameters"]["workers"][1]["state"], "stopped");
}

TEST(ControlServer, IdleClientsAreClosed) {
    ControlServerOptions options;
    options.idle_timeout = std::chrono::milliseconds(100);
    ServerFixture server(options);
    RawClient silent(server.socket_path());
    EXPECT_TRUE(silent.closed_by_peer());
    RawClient halfway(server.socket_path());
    halfway.send("{\"method\":");
    EXPECT_TRUE(halfway.closed_by_peer());
}

TEST(ControlServer, ACallInProgressIsNotIdle) {
    ControlServerOptions options;
    options.idle_timeout = std::chrono::milliseconds(50);
    ServerFixture server(options);
    server.on_loop([](FakeSupervisor& fake) { fake.hold_actions = true; });
    RawClient client(server.socket_path());
    client.send(call_bytes("io.infervisor.supervisor.Stop", {{"names", {"llama"}}}));
    ASSERT_TRUE(
        server.eventually([](FakeSupervisor& f, ControlServer&) { return !f.actions.empty(); }));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // several idle periods
    server.on_loop([](FakeSupervisor& fake) { fake.complete_pending(); });
    auto reply = parsed(client.read_message());
    EXPECT_TRUE(reply.contains("parameters")) << reply;
}

TEST(ControlServer, AClientThatNeverReadsIsClosed) {
    ControlServerOptions options;
    options.max_output = 64 << 10;
    ServerFixture server(options);
    RawClient client(server.socket_path());
    ::fcntl(client.fd(), F_SETFL, O_NONBLOCK);
    std::string call = call_bytes("io.infervisor.supervisor.List");
    bool server_closed = false;
    for (int i = 0; i < 100000 && !server_closed; ++i) {
        ssize_t n = ::send(client.fd(), call.data(), call.size(), MSG_NOSIGNAL);
        if (n < 0 && errno == EAGAIN) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            server_closed = server.connection_count() == 0;
        } else if (n < 0) {
            server_closed = true;  // EPIPE/ECONNRESET
        }
    }
    EXPECT_TRUE(server_closed);
    EXPECT_TRUE(server.eventually(
        [](FakeSupervisor&, ControlServer& s) { return s.connection_count() == 0; }));
}

// Issue 10, defect 7: a reply over the output limit is an error the client
// can read ("reply too large"), not a closed connection.
TEST(ControlServer, AReplyOverTheLimitIsAnErrorAndTheConnectionStays) {
    ControlServerOptions options;
    options.max_output = 64 << 10;
    ServerFixture server(options);
    server.on_loop([](FakeSupervisor& fake) { fake.add_workers(1000); });  // ~300 KiB
    RawClient client(server.socket_path());
    client.send(call_bytes("io.infervisor.supervisor.List"));
    auto reply = parsed(client.read_message());
    EXPECT_EQ(reply["error"], err::kReplyTooLarge) << reply;
    EXPECT_EQ(reply["parameters"]["limit"], 64 << 10);
    EXPECT_GT(reply["parameters"]["size"].get<int64_t>(), 64 << 10);
    client.send(call_bytes("io.infervisor.supervisor.Get", {{"name", "llama"}}));
    EXPECT_EQ(parsed(client.read_message())["parameters"]["worker"]["name"], "llama");
}

TEST(ControlServer, ConnectionsBeyondTheLimitGetAnErrorAndAreClosed) {
    ControlServerOptions options;
    options.max_connections = 4;
    ServerFixture server(options);
    std::vector<VarlinkClient> admitted;
    for (int i = 0; i < 4; ++i) {
        auto c = VarlinkClient::connect(server.socket_path());
        ASSERT_TRUE(c.ok());
        ASSERT_TRUE(c->call("io.infervisor.supervisor.List").ok());
        admitted.push_back(std::move(*c));
    }
    std::vector<std::unique_ptr<RawClient>> excess;
    for (int i = 0; i < 50; ++i)
        excess.push_back(std::make_unique<RawClient>(server.socket_path()));
    for (auto& c : excess) {
        auto refused = parsed(c->read_message());
        EXPECT_EQ(refused["error"], err::kTooManyConnections);
        EXPECT_EQ(refused["parameters"], json({{"scope", "total"}, {"limit", 4}}));
        EXPECT_TRUE(c->closed_by_peer());
    }
    for (auto& c : admitted) EXPECT_TRUE(c.call("io.infervisor.supervisor.List").ok());
    admitted.clear();
    ASSERT_TRUE(server.eventually(
        [](FakeSupervisor&, ControlServer& s) { return s.connection_count() == 0; }));
    auto later = VarlinkClient::connect(server.socket_path());
    ASSERT_TRUE(later.ok());
    EXPECT_TRUE(later->call("io.infervisor.supervisor.List").ok());
}

// As uid 65534, with a per-uid limit of 2: returns 0 when the third
// connection is refused with the limit, the first two keep working, and one
// of them closed makes room again; otherwise the step that failed.
int crowd_as_nobody(const ServerFixture& server) {
    auto path = server.socket_path();
    auto list = [](VarlinkClient& c) {
        auto reply = c.call("io.infervisor.supervisor.List");
        return reply.ok() && !reply->failed();
    };
    return testing::run_as_nobody({}, [&] {
        std::vector<VarlinkClient> held;
        for (int i = 0; i < 2; ++i) {
            auto c = VarlinkClient::connect(path);
            if (!c || !list(*c)) return 10;
            held.push_back(std::move(*c));
        }
        auto extra = VarlinkClient::connect(path);
        if (!extra) return 11;
        auto refused = extra->call("io.infervisor.supervisor.List");
        if (!refused) return 12;  // the error must arrive, not a reset
        if (refused->error != err::kTooManyConnections) return 13;
        if (refused->parameters != json({{"scope", "uid"}, {"limit", 2}})) return 14;
        if (extra->call("io.infervisor.supervisor.List").ok()) return 15;  // and it is closed
        for (auto& c : held)
            if (!list(c)) return 16;
        held.pop_back();
        for (int attempt = 0; attempt < 2000; ++attempt) {  // until the server saw it go
            auto again = VarlinkClient::connect(path);
            if (again && list(*again)) return 0;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        return 17;
    });
}

TEST(ControlServer, OneUidCannotTakeEveryConnection) {
    ControlServerOptions options;
    options.max_connections = 16;
    options.max_connections_per_uid = 2;
    options.root_reserved_connections = 0;
    ServerFixture server(options);
    std::vector<VarlinkClient> root;  // root is exempt from the per-uid limit
    for (int i = 0; i < 3; ++i) {
        auto c = VarlinkClient::connect(server.socket_path());
        ASSERT_TRUE(c.ok());
        ASSERT_FALSE(c->call("io.infervisor.supervisor.List")->failed());
        root.push_back(std::move(*c));
    }
    EXPECT_EQ(crowd_as_nobody(server), 0);
    EXPECT_TRUE(server.eventually([](FakeSupervisor&, ControlServer& s) {
        return s.connection_count(testing::kNobody) == 0;
    }));
    for (auto& c : root) EXPECT_FALSE(c.call("io.infervisor.supervisor.List")->failed());
}

TEST(ControlServer, TheLastConnectionsAreKeptForRoot) {
    ControlServerOptions options;
    options.max_connections = 3;
    options.root_reserved_connections = 2;
    ServerFixture server(options);
    auto path = server.socket_path();
    // Unprivileged clients get max_connections - root_reserved = 1 ...
    int rc = testing::run_as_nobody({}, [&] {
        auto first = VarlinkClient::connect(path);
        if (!first || first->call("io.infervisor.supervisor.List")->failed()) return 10;
        auto second = VarlinkClient::connect(path);
        if (!second) return 11;
        auto refused = second->call("io.infervisor.supervisor.List");
        if (!refused || refused->error != err::kTooManyConnections) return 12;
        return refused->parameters == json({{"scope", "total"}, {"limit", 1}}) ? 0 : 13;
    });
    EXPECT_EQ(rc, 0);
    ASSERT_TRUE(server.eventually(
        [](FakeSupervisor&, ControlServer& s) { return s.connection_count() == 0; }));
    // ... root all of them.
    std::vector<VarlinkClient> root;
    for (int i = 0; i < 3; ++i) {
        auto c = VarlinkClient::connect(server.socket_path());
        ASSERT_TRUE(c.ok());
        auto reply = c->call("io.infervisor.supervisor.List");
        ASSERT_TRUE(reply.ok()) << reply.error().message();
        EXPECT_FALSE(reply->failed()) << reply->error;
        root.push_back(std::move(*c));
    }
}

// As uid 65534: calls `method` and returns 0 if the reply's error is `expected`.
int call_as_nobody(const ServerFixture& server, std::vector<gid_t> groups,
                   const std::string& method, json params, std::string_view expected) {
    auto path = server.socket_path();
    return testing::run_as_nobody(groups, [&] {
        auto client = VarlinkClient::connect(path);
        if (!client) return 10;
        auto reply = client->call(method, params);
        if (!reply) return 11;
        return reply->error == expected ? 0 : 12;
    });
}

TEST(ControlServer, UnprivilegedCallersMayReadButNotChange) {
    ServerFixture server;
    EXPECT_EQ(call_as_nobody(server, {}, "io.infervisor.supervisor.List", json::object(), ""), 0);
    EXPECT_EQ(call_as_nobody(server, {}, "io.infervisor.supervisor.Stop", {{"names", {"llama"}}},
                             err::kPermissionDenied),
              0);
    EXPECT_EQ(call_as_nobody(server, {}, "io.infervisor.supervisor.Reload", json::object(),
                             err::kPermissionDenied),
              0);
    server.on_loop([](FakeSupervisor& fake) { EXPECT_TRUE(fake.actions.empty()); });
}

TEST(ControlServer, TheControlGroupMayChange) {
    ControlServerOptions options;
    options.control_group = 4242;
    ServerFixture server(options);
    EXPECT_EQ(
        call_as_nobody(server, {4242}, "io.infervisor.supervisor.Stop", {{"names", {"llama"}}}, ""),
        0);
    EXPECT_EQ(call_as_nobody(server, {4243}, "io.infervisor.supervisor.Stop",
                             {{"names", {"llama"}}}, err::kPermissionDenied),
              0);
    server.on_loop([](FakeSupervisor& fake) {
        EXPECT_EQ(fake.actions, std::vector<std::string>{"stop llama"});
    });
}

TEST(ControlServer, AClientLeavingDuringAPendingCallIsHarmless) {
    ServerFixture server;
    server.on_loop([](FakeSupervisor& fake) { fake.hold_actions = true; });
    {
        RawClient client(server.socket_path());
        client.send(call_bytes("io.infervisor.supervisor.Stop", {{"names", {"llama"}}}));
        ASSERT_TRUE(server.eventually(
            [](FakeSupervisor& f, ControlServer&) { return !f.actions.empty(); }));
    }
    server.on_loop([](FakeSupervisor& fake) { fake.complete_pending(); });
    auto other = VarlinkClient::connect(server.socket_path());
    ASSERT_TRUE(other.ok());
    auto reply = other->call("io.infervisor.supervisor.Get", {{"name", "llama"}});
    EXPECT_EQ(reply->parameters["worker"]["state"], "stopped");
}

TEST(ControlServer, StreamsEventsUntilTheClientLeaves) {
    ServerFixture server;
    auto client = std::make_unique<RawClient>(server.socket_path());
    client->send(encode_call({"io.infervisor.supervisor.Subscribe", json::object(), true, false}));
    ASSERT_TRUE(server.eventually(
        [](FakeSupervisor& f, ControlServer&) { return f.subscriber_count() == 1; }));
    server.on_loop([](FakeSupervisor& fake) {
        fake.emit({1700000000000000, "llama", "killed", "memory.max reached", {{"pid", "4242"}}});
    });
    auto reply = parsed(client->read_message());
    EXPECT_EQ(reply["continues"], true);
    EXPECT_EQ(reply["parameters"]["event"]["kind"], "killed");
    EXPECT_EQ(reply["parameters"]["event"]["fields"]["pid"], "4242");
    client.reset();
    EXPECT_TRUE(server.eventually([](FakeSupervisor& f, ControlServer& s) {
        return f.subscriber_count() == 0 && s.connection_count() == 0;
    }));
}

TEST(ControlServer, HalfClosedClientsStillGetTheirReplies) {
    ServerFixture server;
    RawClient client(server.socket_path());
    client.send(call_bytes("io.infervisor.supervisor.List"));
    client.shutdown_write();
    EXPECT_TRUE(parsed(client.read_message()).contains("parameters"));
    EXPECT_TRUE(client.closed_by_peer());
}

TEST(ControlServer, StopClosesSessionsAndRemovesTheSocket) {
    ServerFixture server;
    RawClient client(server.socket_path());
    client.send(encode_call({"io.infervisor.supervisor.Subscribe", json::object(), true, false}));
    ASSERT_TRUE(server.eventually(
        [](FakeSupervisor& f, ControlServer&) { return f.subscriber_count() == 1; }));
    server.stop();  // returns only once the loop has drained by itself
    EXPECT_TRUE(client.closed_by_peer());
    EXPECT_FALSE(std::filesystem::exists(server.socket_path()));
}

}  // namespace
}  // namespace infervisor
