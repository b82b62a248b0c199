// `infervisorctl remove-workdir` (the real binary) and the RemoveWorkDir
// call, against a ControlServer with a FakeSupervisor.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ctl_process.h"
#include "server_fixture.h"

namespace infervisor {
namespace {

using testing::CtlOptions;
using testing::CtlResult;
using testing::FakeSupervisor;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::run_ctl;
using testing::ServerFixture;

class RemoveWorkDirTest : public ::testing::Test {
  protected:
    CtlResult ctl(std::vector<std::string> args, CtlOptions options = {}) {
        args.insert(args.begin(), {"--socket", server.socket_path().string()});
        return run_ctl(args, options);
    }

    ServerFixture server;
};

TEST_F(RemoveWorkDirTest, RemovesARemovedWorkersDirAndSaysWhich) {
    server.on_loop([](FakeSupervisor& fake) { fake.workdirs = {"old-llama"}; });
    auto r = ctl({"remove-workdir", "--yes", "old-llama"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "removed /var/lib/infervisor/workers/old-llama\n");
    auto again = ctl({"remove-workdir", "-y", "old-llama"});
    EXPECT_EQ(again.exit_code, 0) << again.err;
    EXPECT_THAT(again.out, HasSubstr("nothing to remove"));
    server.on_loop([](FakeSupervisor& fake) {
        EXPECT_EQ(fake.actions, (std::vector<std::string>{"remove-workdir old-llama",
                                                          "remove-workdir old-llama"}));
    });
}

// podman's and apt's way: a person is asked, a script must say --yes.
TEST_F(RemoveWorkDirTest, WithoutATerminalItNeedsYesAndDeletesNothing) {
    server.on_loop([](FakeSupervisor& fake) { fake.workdirs = {"old-llama"}; });
    auto r = ctl({"remove-workdir", "old-llama"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_THAT(r.err, HasSubstr("would delete /var/lib/infervisor/workers/old-llama"));
    EXPECT_THAT(r.err, HasSubstr("pass --yes"));
    server.on_loop([](FakeSupervisor& fake) {
        EXPECT_EQ(fake.workdirs, (std::vector<std::string>{"old-llama"}));
        EXPECT_EQ(fake.actions, (std::vector<std::string>{"remove-workdir --dry-run old-llama"}));
    });
}

TEST_F(RemoveWorkDirTest, OnATerminalItAsksAndDeletesOnlyOnYes) {
    server.on_loop([](FakeSupervisor& fake) { fake.workdirs = {"old-llama"}; });
    auto no = ctl({"remove-workdir", "old-llama"}, {.stdin_on_pty = true, .stdin_text = "n\n"});
    EXPECT_EQ(no.exit_code, 1);
    EXPECT_THAT(no.out, HasSubstr("Delete /var/lib/infervisor/workers/old-llama, the work dir of "
                                  "removed worker 'old-llama', and everything in it? [y/N]"));
    EXPECT_THAT(no.out, HasSubstr("nothing removed"));
    server.on_loop([](FakeSupervisor& fake) {
        EXPECT_EQ(fake.workdirs, (std::vector<std::string>{"old-llama"}));
    });
    auto yes = ctl({"remove-workdir", "old-llama"}, {.stdin_on_pty = true, .stdin_text = "y\n"});
    EXPECT_EQ(yes.exit_code, 0) << yes.out;
    EXPECT_THAT(yes.out, HasSubstr("removed /var/lib/infervisor/workers/old-llama"));
    server.on_loop([](FakeSupervisor& fake) { EXPECT_TRUE(fake.workdirs.empty()); });
    // Nothing there: nothing to ask about.
    auto none = ctl({"remove-workdir", "old-llama"}, {.stdin_on_pty = true});
    EXPECT_EQ(none.exit_code, 0) << none.out;
    EXPECT_THAT(none.out, HasSubstr("nothing to remove"));
    EXPECT_THAT(none.out, Not(HasSubstr("[y/N]")));
}

TEST_F(RemoveWorkDirTest, DryRunSaysWhichDirAndDeletesNothing) {
    server.on_loop([](FakeSupervisor& fake) { fake.workdirs = {"old-llama"}; });
    auto r = ctl({"remove-workdir", "--dry-run", "old-llama"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "would remove /var/lib/infervisor/workers/old-llama\n");
    server.on_loop([](FakeSupervisor& fake) {
        EXPECT_EQ(fake.workdirs, (std::vector<std::string>{"old-llama"}));
    });
    EXPECT_EQ(ctl({"remove-workdir", "--dry-run", "--yes", "old-llama"}).exit_code, 2);
}

TEST_F(RemoveWorkDirTest, IsRefusedForAConfiguredWorker) {
    auto r = ctl({"remove-workdir", "llama"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("llama: worker 'llama' is configured"));
    server.on_loop([](FakeSupervisor& fake) { EXPECT_TRUE(fake.actions.empty()); });
}

TEST_F(RemoveWorkDirTest, NeedsThePermissionToChangeThings) {
    auto r = ctl({"remove-workdir", "--yes", "old-llama"}, {.as_nobody = true});
    EXPECT_EQ(r.exit_code, 5);
    EXPECT_THAT(r.err, HasSubstr("permission denied"));
    server.on_loop([](FakeSupervisor& fake) { EXPECT_TRUE(fake.actions.empty()); });
}

TEST_F(RemoveWorkDirTest, UsageAndHelp) {
    EXPECT_EQ(ctl({"remove-workdir"}).exit_code, 2);
    auto help = run_ctl({"remove-workdir", "--help"});
    EXPECT_EQ(help.exit_code, 0);
    EXPECT_THAT(help.out, HasSubstr("infervisorctl remove-workdir old-llama"));
    EXPECT_THAT(run_ctl({"--help"}).out, HasSubstr("remove-workdir"));
}

}  // namespace
}  // namespace infervisor
