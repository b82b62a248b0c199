// Issue 26 #9: a worker's checkpoints hold prompts and KV caches, so an
// operator lists and deletes them. ListCheckpoints and DeleteCheckpoints
// through VarlinkService (who may, which ids get through), and
// `infervisorctl checkpoints` (the real binary) against a ControlServer with
// a FakeSupervisor.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "control/varlink_errors.h"
#include "control/varlink_service.h"
#include "ctl_process.h"
#include "fake_supervisor.h"
#include "human_format.h"
#include "recording_sink.h"
#include "server_fixture.h"

namespace infervisor {
namespace {

using nlohmann::json;
using testing::CtlOptions;
using testing::CtlResult;
using testing::FakeSupervisor;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::run_ctl;
using testing::ServerFixture;
namespace err = varlink_error;

constexpr uid_t kCheckpointNobody = 65534;
constexpr gid_t kCheckpointControlGroup = 4242;

// A cooperative checkpoint, one of llama-server's slots and a criu image,
// the newest offered next.
std::vector<CheckpointEntry> three_checkpoints() {
    return {{"0000000001", 1, 1'700'000'000, 1 << 20, false, false},
            {"0000000002", 2, 1'700'000'600, std::nullopt, false, false, true},
            {"0000000003", 3, std::nullopt, 3u << 30, true, true}};
}

std::vector<std::string> ids_of(const std::vector<CheckpointEntry>& entries) {
    std::vector<std::string> out;
    for (const auto& e : entries) out.push_back(e.id);
    return out;
}

class CheckpointsCallTest : public ::testing::Test {
  protected:
    void SetUp() override {
        fake.add_worker("llama");
        fake.checkpoints["llama"] = three_checkpoints();
    }
    std::shared_ptr<testing::RecordingSink> call(const std::string& method, json params,
                                                 uid_t uid = kCheckpointNobody) {
        auto sink = std::make_shared<testing::RecordingSink>();
        PeerCredentials peer{uid, uid == 0 ? 0 : kCheckpointNobody, 1, {}};
        service.handle({"io.infervisor.supervisor." + method, std::move(params), false, false},
                       peer, sink);
        return sink;
    }
    std::shared_ptr<testing::RecordingSink> remove(json params, uid_t uid = 0) {
        return call("DeleteCheckpoints", std::move(params), uid);
    }
    std::vector<std::string> left() { return ids_of(fake.checkpoints["llama"]); }

    FakeSupervisor fake;
    VarlinkService service{fake, AccessPolicy{kCheckpointControlGroup}};
};

// Ids, times, sizes, methods: what a status reader may see. Nothing of a
// checkpoint's contents is in the reply (the supervisor has no way to say).
TEST_F(CheckpointsCallTest, AnyoneWhoMayReadStatusMayListThem) {
    auto sink = call("ListCheckpoints", {{"name", "llama"}});
    ASSERT_EQ(sink->last().error, "");
    const json& reply = sink->last().parameters;
    EXPECT_EQ(reply["directory"], "/var/lib/infervisor/checkpoints/llama");
    ASSERT_EQ(reply["checkpoints"].size(), 3u);
    EXPECT_EQ(reply["checkpoints"][0], (json{{"id", "0000000001"},
                                             {"sequence", 1},
                                             {"written_usec", int64_t{1'700'000'000} * 1'000'000},
                                             {"bytes", 1 << 20},
                                             {"method", "cooperative"},
                                             {"next_restore", false}}));
    EXPECT_TRUE(reply["checkpoints"][1]["bytes"].is_null());
    EXPECT_EQ(reply["checkpoints"][1]["method"], "llama_server");
    EXPECT_TRUE(reply["checkpoints"][2]["written_usec"].is_null());
    EXPECT_EQ(reply["checkpoints"][2]["method"], "criu");
    EXPECT_EQ(reply["checkpoints"][2]["next_restore"], true);
    EXPECT_EQ(call("ListCheckpoints", {{"name", "nope"}})->last().error, err::kWorkerNotFound);
    EXPECT_EQ(call("ListCheckpoints", json::object())->last().error, err::kInvalidParameter);
}

TEST_F(CheckpointsCallTest, AnUnprivilegedCallerCannotDeleteOne) {
    for (json params : {json{{"name", "llama"}, {"ids", {"0000000001"}}},
                        json{{"name", "llama"}, {"all", true}}}) {
        auto sink = remove(params, kCheckpointNobody);
        EXPECT_EQ(sink->last().error, err::kPermissionDenied) << params;
    }
    EXPECT_EQ(left(), ids_of(three_checkpoints()));
    EXPECT_TRUE(fake.actions.empty());
}

TEST_F(CheckpointsCallTest, TheControlGroupAndRootMayDeleteAndTheCallerIsPassedOn) {
    auto sink = std::make_shared<testing::RecordingSink>();
    PeerCredentials member{1000, 1000, 1, {kCheckpointControlGroup}};
    service.handle({"io.infervisor.supervisor.DeleteCheckpoints",
                    {{"name", "llama"}, {"ids", {"0000000002"}}},
                    false,
                    false},
                   member, sink);
    ASSERT_EQ(sink->last().error, "");
    EXPECT_EQ(sink->last().parameters["deleted"], json({"0000000002"}));
    EXPECT_EQ(left(), (std::vector<std::string>{"0000000001", "0000000003"}));
    auto all = remove({{"name", "llama"}, {"all", true}});
    ASSERT_EQ(all->last().error, "");
    EXPECT_EQ(all->last().parameters["deleted"], json({"0000000001", "0000000003"}));
    EXPECT_TRUE(left().empty());
    EXPECT_EQ(fake.actions, (std::vector<std::string>{
                                "delete-checkpoints llama 0000000002 by uid 1000",
                                "delete-checkpoints llama 0000000001 0000000003 by uid 0"}));
}

// Every id is hostile: it must be ten digits before the supervisor sees it,
// and the supervisor finds it among the worker's checkpoints or refuses.
// Either way, nothing is deleted.
TEST_F(CheckpointsCallTest, ABadIdIsAClearErrorAndDeletesNothing) {
    std::vector<json> malformed = {"../x",
                                   "a/b",
                                   "",
                                   std::string(5000, '1'),
                                   "../../../../etc",
                                   "0000000001/..",
                                   "000000001",
                                   "00000000010",
                                   " 000000001",
                                   "000000000\n",
                                   std::string("0000000001\0", 11),
                                   "staging",
                                   "trash",
                                   "0000000001.info",
                                   7,
                                   nullptr};
    for (const json& id : malformed) {
        auto sink = remove({{"name", "llama"}, {"ids", {"0000000001", id}}});
        EXPECT_EQ(sink->last().error, err::kInvalidParameter) << id;
        EXPECT_EQ(sink->last().parameters["parameter"], "ids") << id;
    }
    // Well-formed, but not one of the worker's: the supervisor says so.
    auto unknown = remove({{"name", "llama"}, {"ids", {"0000000001", "0000000009"}}});
    EXPECT_EQ(unknown->last().error, err::kActionFailed);
    EXPECT_THAT(unknown->last().parameters["reason"].get<std::string>(),
                HasSubstr("no checkpoint '0000000009'"));
    EXPECT_EQ(left(), ids_of(three_checkpoints()));
    EXPECT_TRUE(fake.actions.empty());
}

TEST_F(CheckpointsCallTest, IdsOrAllExactlyOneAndAKnownWorker) {
    for (json params : {json{{"name", "llama"}}, json{{"name", "llama"}, {"ids", json::array()}},
                        json{{"name", "llama"}, {"all", false}},
                        json{{"name", "llama"}, {"all", true}, {"ids", {"0000000001"}}},
                        json{{"name", "llama"}, {"ids", "0000000001"}},
                        json{{"name", "llama"}, {"all", "yes"}}, json{{"ids", {"0000000001"}}},
                        json{{"name", "llama"}, {"ids", {"0000000001"}}, {"path", "/etc"}}}) {
        auto sink = remove(params);
        EXPECT_EQ(sink->last().error, err::kInvalidParameter) << params;
    }
    std::vector<json> too_many(1025, "0000000001");
    EXPECT_EQ(remove({{"name", "llama"}, {"ids", too_many}})->last().error, err::kInvalidParameter);
    auto nope = remove({{"name", "nope"}, {"all", true}});
    EXPECT_EQ(nope->last().error, err::kWorkerNotFound);
    EXPECT_EQ(left(), ids_of(three_checkpoints()));
    EXPECT_TRUE(fake.actions.empty());
}

TEST(CheckpointsInterface, ListingReadsAndDeletingChanges) {
    EXPECT_FALSE(VarlinkService::changes_state("io.infervisor.supervisor.ListCheckpoints"));
    EXPECT_TRUE(VarlinkService::changes_state("io.infervisor.supervisor.DeleteCheckpoints"));
}

// The real infervisorctl.
class CheckpointsCommandTest : public ::testing::Test {
  protected:
    void SetUp() override {
        server.on_loop(
            [](FakeSupervisor& fake) { fake.checkpoints["llama"] = three_checkpoints(); });
    }
    CtlResult ctl(std::vector<std::string> args, CtlOptions options = {}) {
        args.insert(args.begin(), {"--socket", server.socket_path().string()});
        return run_ctl(args, options);
    }
    std::vector<std::string> left() {
        std::vector<std::string> out;
        server.on_loop([&](FakeSupervisor& fake) { out = ids_of(fake.checkpoints["llama"]); });
        return out;
    }

    ServerFixture server;
};

TEST_F(CheckpointsCommandTest, ListsIdTimeSizeMethodAndTheNextRestore) {
    auto r = ctl({"checkpoints", "llama"}, {.as_nobody = true});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::string first_time = cli::local_time(uint64_t{1'700'000'000} * 1'000'000);
    EXPECT_EQ(r.out,
              "ID          WRITTEN                SIZE  METHOD        RESTORE\n"
              "0000000001  " +
                  first_time +
                  "      1M  cooperative\n"
                  "0000000002  " +
                  cli::local_time(uint64_t{1'700'000'600} * 1'000'000) +
                  "       -  llama_server\n"
                  "0000000003  -                        3G  criu          next\n"
                  "in /var/lib/infervisor/checkpoints/llama; RESTORE: what the next start "
                  "restores (deleting it makes that start fresh)\n");
    auto bare = ctl({"--no-legend", "checkpoints", "llama"});
    EXPECT_EQ(bare.out.find("ID"), std::string::npos);
    EXPECT_EQ(std::count(bare.out.begin(), bare.out.end(), '\n'), 3);
}

TEST_F(CheckpointsCommandTest, JsonIsTheDaemonsReply) {
    auto r = ctl({"checkpoints", "llama", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    json reply = json::parse(r.out);
    EXPECT_EQ(reply["checkpoints"].size(), 3u);
    EXPECT_EQ(reply["checkpoints"][2]["id"], "0000000003");
    EXPECT_EQ(reply["directory"], "/var/lib/infervisor/checkpoints/llama");
    // Deleting has no JSON output: refused, nothing deleted.
    EXPECT_EQ(ctl({"checkpoints", "llama", "--json", "--all", "--yes"}).exit_code, 2);
    EXPECT_EQ(left().size(), 3u);
}

TEST_F(CheckpointsCommandTest, NoCheckpointsAndAnUnknownWorker) {
    auto none = ctl({"checkpoints", "whisper"});
    EXPECT_EQ(none.exit_code, 0) << none.err;
    EXPECT_EQ(none.out, "worker 'whisper' has no checkpoints\n");
    auto all = ctl({"checkpoints", "whisper", "--all", "--yes"});
    EXPECT_EQ(all.exit_code, 0) << all.err;
    EXPECT_THAT(all.out, HasSubstr("nothing to delete"));
    auto unknown = ctl({"checkpoints", "nope"});
    EXPECT_EQ(unknown.exit_code, 3);
    EXPECT_THAT(unknown.err, HasSubstr("no worker named 'nope'"));
}

TEST_F(CheckpointsCommandTest, DeleteTakesTheIdAsListedOrItsNumber) {
    auto r = ctl({"checkpoints", "llama", "--delete", "0000000001", "--yes"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "deleted checkpoint 0000000001 of llama\n");
    auto short_id = ctl({"checkpoints", "llama", "--delete", "3", "-y"});
    EXPECT_EQ(short_id.exit_code, 0) << short_id.err;
    EXPECT_EQ(short_id.out, "deleted checkpoint 0000000003 of llama\n");
    EXPECT_EQ(left(), (std::vector<std::string>{"0000000002"}));
    server.on_loop([](FakeSupervisor& fake) {
        EXPECT_EQ(fake.actions,
                  (std::vector<std::string>{"delete-checkpoints llama 0000000001 by uid 0",
                                            "delete-checkpoints llama 0000000003 by uid 0"}));
    });
}

TEST_F(CheckpointsCommandTest, ABadOrUnknownIdDeletesNothing) {
    for (const char* id : {"../x", "a/b", "", "12345678901", "0x10", "1 "}) {
        auto r = ctl({"checkpoints", "llama", "--delete", id, "--yes"});
        EXPECT_EQ(r.exit_code, 2) << id;
        EXPECT_THAT(r.err, HasSubstr("is not a checkpoint id")) << id << r.err;
    }
    auto unknown = ctl({"checkpoints", "llama", "--delete", "9", "--yes"});
    EXPECT_EQ(unknown.exit_code, 1);
    EXPECT_THAT(unknown.err, HasSubstr("worker 'llama' has no checkpoint 0000000009"));
    EXPECT_EQ(left().size(), 3u);
    server.on_loop([](FakeSupervisor& fake) { EXPECT_TRUE(fake.actions.empty()); });
}

TEST_F(CheckpointsCommandTest, WithoutATerminalDeletingNeedsYes) {
    auto r = ctl({"checkpoints", "llama", "--all"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_THAT(r.err, HasSubstr("would delete all 3 checkpoints of worker 'llama'"));
    EXPECT_THAT(r.err, HasSubstr("pass --yes"));
    EXPECT_EQ(left().size(), 3u);
}

TEST_F(CheckpointsCommandTest, OnATerminalItAsksAndDeletesOnlyOnYes) {
    auto no =
        ctl({"checkpoints", "llama", "--delete", "2"}, {.stdin_on_pty = true, .stdin_text = "n\n"});
    EXPECT_EQ(no.exit_code, 1);
    EXPECT_THAT(no.out, HasSubstr("Delete checkpoint 0000000002 of worker 'llama'? [y/N]"));
    EXPECT_THAT(no.out, HasSubstr("nothing deleted"));
    EXPECT_EQ(left().size(), 3u);
    auto yes = ctl({"checkpoints", "llama", "--all"}, {.stdin_on_pty = true, .stdin_text = "y\n"});
    EXPECT_EQ(yes.exit_code, 0) << yes.out;
    EXPECT_THAT(yes.out, HasSubstr("Delete all 3 checkpoints of worker 'llama'? [y/N]"));
    EXPECT_THAT(yes.out, HasSubstr("deleted checkpoint 0000000003 of llama"));
    EXPECT_TRUE(left().empty());
}

TEST_F(CheckpointsCommandTest, DeletingNeedsThePermissionToChangeThings) {
    auto r = ctl({"checkpoints", "llama", "--all", "--yes"}, {.as_nobody = true});
    EXPECT_EQ(r.exit_code, 5);
    EXPECT_THAT(r.err, HasSubstr("permission denied"));
    EXPECT_EQ(left().size(), 3u);
}

TEST_F(CheckpointsCommandTest, UsageAndHelp) {
    EXPECT_EQ(ctl({"checkpoints"}).exit_code, 2);
    EXPECT_EQ(ctl({"checkpoints", "llama", "--delete", "1", "--all"}).exit_code, 2);
    auto help = run_ctl({"checkpoints", "--help"});
    EXPECT_EQ(help.exit_code, 0);
    EXPECT_THAT(help.out, HasSubstr("infervisorctl checkpoints llama --delete 7"));
    EXPECT_THAT(help.out, HasSubstr("unencrypted"));
    EXPECT_THAT(run_ctl({"--help"}).out, HasSubstr("checkpoints"));
    EXPECT_THAT(help.out, Not(HasSubstr("REMOVE")));
}

}  // namespace
}  // namespace infervisor
