// `infervisorctl simulate` and `history` (with --export too), the real
// binary against the Trace call of a ControlServer (a FakeSupervisor's
// recording) and on exported files: a recording of a leak whose live
// decision the replay with the same rules finds again, a wider threshold
// that acts earlier and says where the replay departs, hostile files and
// configurations refused; the worker's history drawn from the same recording.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "ctl_process.h"
#include "policy/policy_trace.h"
#include "server_fixture.h"
#include "support/byte_units.h"
#include "support/temp_dir.h"

namespace infervisor {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::run_ctl;
using namespace std::chrono_literals;

// One worker capped at 1 GiB that grows 10 MiB/s from 300 MiB from t=10s;
// the daemon's rule "big" (memory.current > 80% for 4s) killed it at the
// sample where it had held for 4s, and the run ended.
constexpr const char* kConfig = R"(workers:
  - name: leaky
    command: [/bin/true]
    memory: {max: 1G}
    rules:
      - name: big
        when: memory.current > THRESHOLD% for 4s
        action: kill
)";

std::string config_with(int threshold) {
    std::string text = kConfig;
    text.replace(text.find("THRESHOLD"), 9, std::to_string(threshold));
    return text;
}

std::vector<std::string> leak_recording(double& killed_at) {
    TraceBlockWriter first, second;
    killed_at = -1;
    const uint64_t max = 1 * GiB;
    double held_since = -1;
    for (double t = 0; t < 120; t += 2) {
        TraceBlockWriter& w = t < 40 ? first : second;  // two blocks
        TraceRound r;
        r.time = TimePoint(std::chrono::milliseconds(static_cast<int64_t>(t * 1000)) + 100h);
        r.wall_ms = 1'796'000'000'000 + static_cast<int64_t>(t * 1000);
        r.host.mem_available = 8 * GiB;
        r.host.mem_total = 16 * GiB;
        TraceWorker leaky;
        leaky.name = "leaky";
        leaky.sample.memory_current =
            static_cast<uint64_t>((300 + 10 * std::max(0.0, t - 10)) * MiB);
        leaky.sample.memory_max = max;
        leaky.sample.started_at = TimePoint(100h);
        r.workers.push_back(leaky);
        w.add(r);
        if (*leaky.sample.memory_current > max * 8 / 10) {
            if (held_since < 0) held_since = t;
            if (t - held_since >= 4 && killed_at < 0) {
                killed_at = t;
                w.add(TraceEvent{r.time, r.wall_ms, TraceEventKind::decision, "leaky", "big",
                                 "kill", false, "memory.current is 86% (> 80%) for 4s"});
                w.add(TraceEvent{r.time + 100ms, r.wall_ms + 100, TraceEventKind::exited, "leaky",
                                 "", "", false, "killed by signal 9 (rule 'big')"});
                break;
            }
        }
    }
    return {first.take(), second.take()};
}

class SimulateTest : public ::testing::Test {
  protected:
    void SetUp() override {
        blocks = leak_recording(killed_at);
        ASSERT_GT(killed_at, 0);
        server.on_loop([&](testing::FakeSupervisor& fake) {
            fake.trace_blocks = blocks;
            fake.add_worker("leaky", "backoff");
        });
        config80 = dir.write("eighty.yaml", config_with(80));
        config70 = dir.write("seventy.yaml", config_with(70));
    }
    testing::CtlResult ctl(std::vector<std::string> args) {
        args.insert(args.begin(), {"--socket", server.socket_path().string()});
        return run_ctl(args);
    }

    testing::ServerFixture server;
    testing::TempDir dir;
    std::vector<std::string> blocks;
    double killed_at = 0;
    std::filesystem::path config80, config70;
};

TEST_F(SimulateTest, TheSameRulesDecideAsTheDaemonDidAndSayWhatHappenedAfter) {
    auto r = ctl({"simulate", "--config", config80.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("leaky  rule 'big' kill, as really: memory.current"));
    EXPECT_THAT(r.out, HasSubstr("leaky  really: killed by signal 9 (rule 'big')"));
    EXPECT_THAT(r.out, HasSubstr("1 decision(s) as really, 0 only in the replay, 0 only really."));
    EXPECT_THAT(r.out, HasSubstr("The replay decides as the daemon did."));
}

TEST_F(SimulateTest, AWiderThresholdActsEarlierAndTheRestIsMarkedAsAnIndication) {
    auto r = ctl({"simulate", "--config", config70.string(), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto out = nlohmann::json::parse(r.out);
    ASSERT_EQ(out["items"].size(), 3u) << r.out;
    EXPECT_EQ(out["items"][0]["kind"], "would");
    EXPECT_EQ(out["items"][0]["rule"], "big");
    EXPECT_EQ(out["items"][1]["kind"], "not-taken");
    EXPECT_EQ(out["items"][1]["after_divergence"], true);
    EXPECT_EQ(out["items"][2]["kind"], "happened");
    EXPECT_LT(out["items"][0]["time_usec"], out["items"][1]["time_usec"]);
    EXPECT_EQ(out["diverged_at_usec"], out["items"][0]["time_usec"]);
    EXPECT_EQ(out["would"], 1);
    EXPECT_EQ(out["not_taken"], 1);

    auto text = ctl({"simulate", "--config", config70.string()});
    EXPECT_THAT(text.out, HasSubstr("would: rule 'big' kill"));
    EXPECT_THAT(text.out, HasSubstr("-- from here on the recording shows what followed the real"));
    EXPECT_THAT(text.out, HasSubstr("really: rule 'big' kill, not with this configuration"));
}

TEST_F(SimulateTest, AnExportedRecordingReplaysWithoutTheDaemon) {
    auto file = dir.path() / "incident.trace";
    auto exported = ctl({"history", "--export", file.string()});
    ASSERT_EQ(exported.exit_code, 0) << exported.err;
    EXPECT_THAT(exported.err, HasSubstr("wrote 2 block(s)"));
    auto online = ctl({"simulate", "--config", config80.string()});
    auto offline = run_ctl({"--socket", "/nonexistent/io.infervisor", "simulate", "--from",
                            file.string(), "--config", config80.string()});
    ASSERT_EQ(offline.exit_code, 0) << offline.err;
    EXPECT_EQ(offline.out, online.out);
    auto only = run_ctl({"simulate", "--from", file.string(), "--config", config80.string(),
                         "--worker", "someone-else"});
    EXPECT_THAT(only.out, Not(HasSubstr("leaky")));
}

TEST_F(SimulateTest, HostileFilesAndBrokenConfigurationsAreRefusedWithWhy) {
    auto garbage = dir.write("garbage.trace", "infervisor-trace 1\n\x05\x03\x01\x01\x01\x01");
    auto r = run_ctl({"simulate", "--from", garbage.string(), "--config", config80.string()});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("garbage.trace: block 0"));
    auto text = dir.write("text.trace", "hello\n");
    r = run_ctl({"simulate", "--from", text.string(), "--config", config80.string()});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("not an infervisor trace"));
    auto broken = dir.write("broken.yaml", "workers:\n  - name: leaky\n    memory: {max: 1Q}\n");
    r = run_ctl({"simulate", "--from", text.string(), "--config", broken.string()});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("broken.yaml:3"));
    EXPECT_THAT(r.err, HasSubstr("nothing was simulated"));
    EXPECT_EQ(ctl({"history", "--export", "x", "leaky"}).exit_code, 2);
    EXPECT_EQ(ctl({"history"}).exit_code, 2);
    auto remote = run_ctl({"-H", "gpu-a", "simulate", "--config", config80.string()});
    EXPECT_EQ(remote.exit_code, 2);
    EXPECT_THAT(remote.err, HasSubstr("-H HOST history --export FILE"));
    auto alone = ctl({"reload", "--simulate"});
    EXPECT_EQ(alone.exit_code, 2);
    EXPECT_THAT(alone.err, HasSubstr("--simulate goes with --dry-run"));
}

// `history` draws the worker's samples and the decisions on it from the
// recording; the daemon keeps no second copy.
TEST_F(SimulateTest, HistoryShowsTheRecordedSamplesAndDecisions) {
    auto r = ctl({"history", "leaky", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto reply = nlohmann::json::parse(r.out);
    const size_t rounds = static_cast<size_t>(killed_at / 2) + 1;  // every 2 s from 0
    ASSERT_EQ(reply["samples"].size(), rounds);
    EXPECT_EQ(reply["interval_usec"], 2'000'000);
    EXPECT_EQ(reply["samples"][0]["time_usec"], 1'796'000'000'000'000);
    EXPECT_EQ(reply["samples"][0]["memory_current"], 300 * MiB);
    EXPECT_EQ(reply["samples"][0]["memory_max"], 1 * GiB);
    EXPECT_TRUE(reply["samples"][0]["memory_high"].is_null());
    ASSERT_EQ(reply["actions"].size(), 1u);
    EXPECT_EQ(reply["actions"][0]["rule"], "big");
    EXPECT_EQ(reply["actions"][0]["action"], "kill");

    r = ctl({"history", "leaky", "--json", "-n", "3"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    reply = nlohmann::json::parse(r.out);
    ASSERT_EQ(reply["samples"].size(), 3u);
    EXPECT_EQ(reply["actions"].size(), 1u);  // the kill came at the newest sample

    r = ctl({"history", "leaky", "--csv"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(static_cast<size_t>(std::count(r.out.begin(), r.out.end(), '\n')), rounds + 1);
    r = ctl({"history", "leaky", "--width", "80"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("leaky"));
}

TEST_F(SimulateTest, HistoryOfAWorkerTheDaemonDoesNotKnowIsAnError) {
    auto r = ctl({"history", "nope"});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_THAT(r.err, HasSubstr("nope"));
    EXPECT_EQ(r.out, "");
}

TEST_F(SimulateTest, ADaemonThatKeepsNoRecordingSaysSo) {
    server.on_loop([](testing::FakeSupervisor& fake) { fake.trace_blocks.reset(); });
    auto r = ctl({"simulate", "--config", config80.string()});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("keeps no recording"));
    r = ctl({"history", "leaky"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("keeps no recording"));
}

}  // namespace
}  // namespace infervisor
