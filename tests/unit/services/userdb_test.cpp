// The dynamic users' names for nss-systemd: io.systemd.UserDatabase answers,
// as pure replies and over a real socket.
#include <gmock/gmock.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <thread>

#include "process/dynamic_users.h"
#include "services/userdb_records.h"
#include "services/userdb_server.h"
#include "supervise/worker_launch.h"
#include "support/temp_dir.h"

namespace infervisor {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

const std::map<std::string, uid_t> kUsers = {{"llama", 60578}, {"whisper", 60579}};

json call(const std::string& method, json params, bool more = false) {
    params["service"] = kUserDbService;
    json c = {{"method", "io.systemd.UserDatabase." + method}, {"parameters", params}};
    if (more) c["more"] = true;
    return c;
}

TEST(UserDbRecords, ResolvesUsersAndGroupsByNumberAndName) {
    auto by_uid =
        answer_userdb_call(call("GetUserRecord", {{"uid", 60579}}), kUsers, "/var/lib/iv");
    ASSERT_EQ(by_uid.size(), 1u);
    const json& user = by_uid[0]["parameters"]["record"];
    EXPECT_EQ(user["userName"], "infervisor-w-whisper");
    EXPECT_EQ(user["uid"], 60579);
    EXPECT_EQ(user["gid"], 60579);
    EXPECT_EQ(user["homeDirectory"], "/var/lib/iv/workers/whisper");
    EXPECT_EQ(user["disposition"], "dynamic");
    EXPECT_FALSE(by_uid[0].contains("continues"));

    auto by_name = answer_userdb_call(call("GetUserRecord", {{"userName", "infervisor-w-llama"}}),
                                      kUsers, "/x");
    EXPECT_EQ(by_name[0]["parameters"]["record"]["uid"], 60578);
    auto group = answer_userdb_call(call("GetGroupRecord", {{"gid", 60578}}), kUsers, "/x");
    EXPECT_EQ(group[0]["parameters"]["record"]["groupName"], "infervisor-w-llama");
}

TEST(UserDbRecords, SaysNoRecordBadServiceAndEnumeratesOnlyWithMore) {
    auto none = answer_userdb_call(call("GetUserRecord", {{"uid", 0}}), kUsers, "/x");
    EXPECT_EQ(none[0]["error"], "io.systemd.UserDatabase.NoRecordFound");
    auto conflicting = answer_userdb_call(
        call("GetUserRecord", {{"uid", 60578}, {"userName", "infervisor-w-whisper"}}), kUsers,
        "/x");
    EXPECT_EQ(conflicting[0]["error"], "io.systemd.UserDatabase.NoRecordFound");
    json other = {{"method", "io.systemd.UserDatabase.GetUserRecord"},
                  {"parameters", {{"uid", 60578}, {"service", "io.systemd.Machine"}}}};
    EXPECT_EQ(answer_userdb_call(other, kUsers, "/x")[0]["error"],
              "io.systemd.UserDatabase.BadService");
    EXPECT_EQ(answer_userdb_call(call("GetUserRecord", json::object()), kUsers, "/x")[0]["error"],
              "io.systemd.UserDatabase.EnumerationNotSupported");
    auto all = answer_userdb_call(call("GetGroupRecord", json::object(), true), kUsers, "/x");
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(all[0]["continues"], true);
    EXPECT_FALSE(all[1].contains("continues"));
    EXPECT_EQ(
        answer_userdb_call(call("GetMemberships", json::object(), true), kUsers, "/x")[0]["error"],
        "io.systemd.UserDatabase.NoRecordFound");
    EXPECT_EQ(answer_userdb_call(json::parse("[1]"), kUsers, "/x")[0]["error"],
              "org.varlink.service.InvalidParameter");
}

// One call over a Unix socket, as nss-systemd makes it; the reply text.
std::string ask(const std::filesystem::path& socket, const std::string& message) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", socket.c_str());
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0) {
        ::close(fd);
        return "<connect failed>";
    }
    std::string out = message;
    out.push_back('\0');
    (void)!::write(fd, out.data(), out.size());
    std::string reply;
    char c;
    while (::read(fd, &c, 1) == 1 && c != '\0') reply.push_back(c);
    ::close(fd);
    return reply;
}

TEST(UserDbServer, AnswersOverItsSocketFromTheStore) {
    testing::TempDir dir;
    Paths paths{.runtime_dir = dir.path() / "run" / "infervisor",
                .state_dir = dir.path() / "state"};
    dir.mkdir("run/systemd/userdb");
    auto uid = dynamic_users(paths).acquire("llama");
    ASSERT_TRUE(uid.ok());

    boost::asio::io_context io;
    UserDbServer server(io, paths);
    // Asks for llama's record from another thread while the loop serves it.
    auto ask_for_llama = [&] {
        std::string reply;
        std::atomic<bool> answered{false};
        std::thread client([&] {
            reply = ask(userdb_socket_path(paths),
                        call("GetUserRecord", {{"userName", "infervisor-w-llama"}}).dump());
            answered = true;
        });
        while (!answered) io.run_one_for(std::chrono::milliseconds(50));
        client.join();
        return reply;
    };
    ASSERT_TRUE(server.listen().ok());
    EXPECT_THAT(ask_for_llama(), HasSubstr("\"uid\":" + std::to_string(*uid)));

    server.stop();
    EXPECT_FALSE(std::filesystem::exists(userdb_socket_path(paths)));

    // A service may start again after a stop (a re-execution that failed).
    ASSERT_TRUE(server.listen().ok());
    EXPECT_THAT(ask_for_llama(), HasSubstr("\"uid\":" + std::to_string(*uid)));
    server.stop();
}

TEST(UserDbServer, DoesNotStartWithoutSystemdsUserdbDirectory) {
    testing::TempDir dir;
    boost::asio::io_context io;
    UserDbServer server(io, Paths{.runtime_dir = dir.path() / "run" / "infervisor"});
    auto r = server.listen();
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().message(), HasSubstr("no systemd userdb"));
}

}  // namespace
}  // namespace infervisor
