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
    auto r = ctl({"remove-workdir", "old-llama"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "removed /var/lib/infervisor/workers/old-llama\n");
    auto again = ctl({"remove-workdir", "old-llama"});
    EXPECT_EQ(again.exit_code, 0) << again.err;
    EXPECT_THAT(again.out, HasSubstr("nothing to remove"));
    server.on_loop([](FakeSupervisor& fake) {
        EXPECT_EQ(fake.actions, (std::vector<std::string>{"remove-workdir old-llama",
                                                          "remove-workdir old-llama"}));
    });
}

TEST_F(RemoveWorkDirTest, IsRefusedForAConfiguredWorker) {
    auto r = ctl({"remove-workdir", "llama"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("llama: worker 'llama' is configured"));
    server.on_loop([](FakeSupervisor& fake) { EXPECT_TRUE(fake.actions.empty()); });
}

TEST_F(RemoveWorkDirTest, NeedsThePermissionToChangeThings) {
    auto r = ctl({"remove-workdir", "old-llama"}, {.as_nobody = true});
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
