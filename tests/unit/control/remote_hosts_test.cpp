// infervisorctl -H (issue 32): the real infervisorctl and the real
// infervisor-stdio-bridge, with a stand-in for ssh (INFERVISOR_SSH) that
// records the arguments ssh would get and runs the bridge here against the
// test's daemon — or fails as ssh does when a host does not answer (a host
// named down*). The ssh leg itself is VM 180's (a real sshd).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/file_io.h"
#include "ctl_process.h"
#include "policy/policy_trace.h"
#include "server_fixture.h"
#include "support/temp_dir.h"

namespace infervisor::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class RemoteHosts : public ::testing::Test {
  protected:
    void SetUp() override {
        ssh_ = dir_.write("ssh",
                          "#!/bin/sh\n"
                          "# ssh's stand-in: record, then fail like ssh or run the bridge.\n"
                          "printf '%s\\n' \"$*\" >> \"$SSH_LOG\"\n"
                          "for a; do host=$prev; prev=$a; done\n"
                          "case \"$host\" in *down*)\n"
                          "  echo \"ssh: connect to host $host port 22: Connection refused\" >&2\n"
                          "  exit 255;;\n"
                          "*hang*)  # connected, and never a word: a host frozen mid-command\n"
                          "  echo $$ > \"$HANG_PID\"\n"
                          "  exec sleep 600;;\n"
                          "esac\n"
                          "exec \"$TEST_BRIDGE\" --socket \"$TEST_SOCKET\"\n");
        std::filesystem::permissions(ssh_, std::filesystem::perms::owner_all);
    }
    CtlResult ctl(std::vector<std::string> args, std::string socket = {}) {
        const char* bridge = std::getenv("INFERVISOR_STDIO_BRIDGE");
        EXPECT_NE(bridge, nullptr) << "run through meson test";
        CtlOptions options;
        options.env = {{"INFERVISOR_SSH", ssh_.string()},
                       {"SSH_LOG", (dir_.path() / "ssh.log").string()},
                       {"HANG_PID", (dir_.path() / "hang.pid").string()},
                       {"TEST_BRIDGE", bridge ? bridge : ""},
                       {"TEST_SOCKET", socket.empty() ? server.socket_path().string() : socket}};
        return run_ctl(args, options);
    }
    std::string ssh_log() { return slurp(dir_.path() / "ssh.log"); }
    // Whether the hanging host's stand-in (its pid in hang.pid) has ended:
    // gone, or a zombie its new parent has not reaped yet.
    bool hang_ended() {
        std::string pid = slurp(dir_.path() / "hang.pid");
        while (!pid.empty() && pid.back() == '\n') pid.pop_back();
        if (pid.empty()) return false;
        for (int i = 0; i < 500; ++i) {  // up to 5 s for the kill to land
            std::string stat = slurp("/proc/" + pid + "/stat");
            auto close = stat.rfind(')');
            if (stat.empty() || (close != std::string::npos && stat.substr(close + 2, 1) == "Z"))
                return true;
            ::usleep(10'000);
        }
        return false;
    }

    ServerFixture server;
    TempDir dir_;
    std::filesystem::path ssh_;
};

TEST_F(RemoteHosts, OneHostIsReachedThroughSshAndTheBridgeAsSystemctlDoes) {
    auto r = ctl({"-H", "gpu-a", "status"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("llama"));
    EXPECT_THAT(ssh_log(), ::testing::MatchesRegex("-xT -o ConnectTimeout=10 -o "
                                                   "ServerAliveInterval=5 -o ServerAliveCountMax=3 "
                                                   "-- gpu-a /.*/infervisor-stdio-bridge\n"));
    auto port = ctl({"--host", "root@gpu-b:2222", "stop", "llama"});
    EXPECT_EQ(port.exit_code, 0) << port.err;
    EXPECT_THAT(ssh_log(), HasSubstr("ServerAliveCountMax=3 -p 2222 -- root@gpu-b /"));
    server.on_loop([](FakeSupervisor& fake) {
        EXPECT_THAT(fake.actions, ::testing::ElementsAre("stop llama"));
    });
}

// history asks Get, then the recording, over one connection: one ssh
// session (a second would end the first and ask for a login again).
TEST_F(RemoteHosts, HistoryOnAHostIsOneSshSession) {
    TraceBlockWriter block;
    for (int i = 0; i < 3; ++i) {
        TraceRound round;
        round.time = TimePoint(std::chrono::seconds(100 + 2 * i));
        round.wall_ms = 1'796'000'000'000 + 2000 * i;
        TraceWorker llama;
        llama.name = "llama";
        llama.sample.memory_current = uint64_t{100} << 20;
        TraceWorker other = llama;  // another worker's samples are left out
        other.name = "embed";
        other.sample.memory_current = uint64_t{7} << 20;
        round.workers.push_back(other);
        round.workers.push_back(llama);
        block.add(round);
    }
    server.on_loop([&](FakeSupervisor& fake) { fake.trace_blocks = {block.take()}; });
    auto r = ctl({"-H", "gpu-a", "history", "llama", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto reply = nlohmann::json::parse(r.out);
    EXPECT_EQ(reply["samples"].size(), 3u);
    EXPECT_EQ(reply["samples"][0]["memory_current"], uint64_t{100} << 20);
    const std::string log = ssh_log();
    EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
}

TEST_F(RemoteHosts, AHostThatDoesNotAnswerOrHasNoDaemonSaysSo) {
    auto down = ctl({"-H", "down-a", "status"});
    EXPECT_EQ(down.exit_code, 4);
    EXPECT_THAT(down.err, HasSubstr("ssh: connect to host down-a port 22: Connection refused"));
    EXPECT_THAT(down.err, HasSubstr("infervisorctl: down-a: ssh failed"));
    auto no_daemon = ctl({"-H", "gpu-a", "status"}, (dir_.path() / "nothing").string());
    EXPECT_EQ(no_daemon.exit_code, 4);
    EXPECT_THAT(no_daemon.err, HasSubstr("infervisor-stdio-bridge: infervisord is not running"));
    EXPECT_THAT(no_daemon.err, HasSubstr("infervisorctl: gpu-a: infervisord is not running"));
}

// Several hosts: status makes one table with a HOST column; a host that
// does not answer is a row that says so, and the exit status 4 says that
// one did not.
TEST_F(RemoteHosts, StatusOnSeveralHostsIsOneTableWithARowForAHostThatIsDown) {
    auto r = ctl({"-H", "gpu-a", "-H", "down-b", "-H", "gpu-c", "status"});
    EXPECT_EQ(r.exit_code, 4) << r.err;
    EXPECT_THAT(r.out, ::testing::StartsWith("HOST    NAME"));
    EXPECT_THAT(r.out, HasSubstr("\ngpu-a   llama"));
    EXPECT_THAT(r.out, HasSubstr("\ngpu-c   llama"));
    EXPECT_THAT(r.out,
                HasSubstr("down-b  (no answer: ssh: connect to host down-b port 22: Connection "
                          "refused)"));
    EXPECT_THAT(ssh_log(), HasSubstr("-xT -o BatchMode=yes -o ConnectTimeout=10 "));
    auto json = nlohmann::json::parse(ctl({"--json", "-H", "gpu-a", "-H", "down-b", "status"}).out);
    ASSERT_EQ(json["hosts"].size(), 2u);
    EXPECT_EQ(json["hosts"][0]["host"], "gpu-a");
    EXPECT_EQ(json["hosts"][0]["workers"][0]["name"], "llama");
    EXPECT_EQ(json["hosts"][1]["host"], "down-b");
    EXPECT_EQ(json["hosts"][1]["exit_code"], 4);
    auto all_up = ctl({"-H", "gpu-a", "-H", "gpu-c", "status"});
    EXPECT_EQ(all_up.exit_code, 0) << all_up.err;
}

// A host that connects and then never answers (frozen mid-command, or its
// daemon hangs): its row says so once its time is up, the others are
// shown, and nothing of it is left running. One -H alone: the same, said.
TEST_F(RemoteHosts, AHostThatNeverAnswersIsARowOnceItsTimeIsUpAndIsEnded) {
    auto r = ctl({"-H", "gpu-a", "-H", "hang-b", "status", "--timeout", "1s"});
    EXPECT_EQ(r.exit_code, 4) << r.err;
    EXPECT_THAT(r.out, HasSubstr("\ngpu-a   llama"));
    EXPECT_THAT(r.out, HasSubstr("\nhang-b  (no answer within 1s)"));
    EXPECT_TRUE(hang_ended()) << "the hanging host's ssh was left running";
    std::filesystem::remove(dir_.path() / "hang.pid");
    auto one = ctl({"-H", "hang-a", "status", "--timeout", "1s"});
    EXPECT_EQ(one.exit_code, 4);
    EXPECT_THAT(one.err, HasSubstr("infervisorctl: hang-a: no answer within 1s"));
    EXPECT_TRUE(hang_ended()) << "the hanging host's ssh was left running";
    auto bad = ctl({"-H", "gpu-a", "-H", "gpu-b", "status", "--timeout", "soon"});
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_THAT(bad.err, HasSubstr("--timeout: expected a duration such as 30s"));
}

TEST_F(RemoteHosts, AChangeOnSeveralHostsIsRefusedAndNothingIsDone) {
    auto r = ctl({"-H", "gpu-a", "-H", "gpu-b", "stop", "llama"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_THAT(r.err, HasSubstr("several -H: only 'status' reads many hosts at once"));
    server.on_loop([](FakeSupervisor& fake) { EXPECT_TRUE(fake.actions.empty()); });
}

// What reads this machine (its journal, its files) would answer for the
// wrong host: refused with -H.
TEST_F(RemoteHosts, CommandsThatReadThisMachineRefuseAHost) {
    for (std::vector<std::string> args : {std::vector<std::string>{"-H", "gpu-a", "logs", "llama"},
                                          {"-H", "gpu-a", "events", "-D", "/var/log/journal"},
                                          {"-H", "gpu-a", "config", "check"}}) {
        auto r = ctl(args);
        EXPECT_EQ(r.exit_code, 2) << args[2];
        EXPECT_THAT(r.err, HasSubstr("so it takes no -H")) << args[2];
    }
    EXPECT_EQ(ctl({"-H", "gpu-a", "events", "-n", "1"}).exit_code, 0) << "the daemon's events";
}

TEST_F(RemoteHosts, AHostThatCouldBeReadAsAnOptionIsRefused) {
    for (const char* bad :
         {"-oProxyCommand=touch x", "gpu a", "gpu;a", "user@", "gpu:99999", "[::1", "gpu:"}) {
        auto r = ctl({"-H", bad, "status"});
        EXPECT_EQ(r.exit_code, 2) << bad;
        EXPECT_THAT(r.err, HasSubstr("(expected [USER@]HOST[:PORT])")) << bad;
    }
    EXPECT_THAT(ssh_log(), Not(HasSubstr("ProxyCommand")));
    EXPECT_EQ(ctl({"-H", "[::1]:22", "status"}).exit_code, 0);
}

}  // namespace
}  // namespace infervisor::testing
