// The seeds' crashes as the daemon recorded them in the VM (a leak ended by
// the shipped worker rules, the same leak with only the host rules, a fast
// model load, a second model load on a low host, a tiny host's grower, a
// spinning worker): each is tests/unit/policy/recorded_traces/NAME, the
// export of `infervisorctl history --export` (recording.trace) beside the
// workers' files it ran with (workers.d), taken by tests/vm's
// what_if_agrees. Replayed with the SHIPPED main file and those workers,
// the engine decides what the live daemon decided, at the same evaluation:
// no decision only one side took, no departure. A change to the engine or
// the shipped rules that changes what they decide on these runs shows here
// first, naming the run, the rule and the moment.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>

#include "base/file_io.h"
#include "config/config_loader.h"
#include "policy/trace_replay.h"
#include "supervise/policy_options.h"
#include "support/temp_dir.h"

namespace infervisor {
namespace {

namespace fs = std::filesystem;

fs::path source_root() {
    const char* src = std::getenv("INFERVISOR_SOURCE_ROOT");
    EXPECT_NE(src, nullptr);
    return src ? fs::path(src) : fs::path();
}

std::vector<fs::path> recordings() {
    std::vector<fs::path> out;
    fs::path dir = source_root() / "tests/unit/policy/recorded_traces";
    for (const auto& entry : fs::directory_iterator(dir))
        if (entry.is_directory()) out.push_back(entry.path());
    std::sort(out.begin(), out.end());
    return out;
}

ReplayResult replay(const fs::path& run, const fs::path& main_file) {
    auto loaded = load_config({main_file, run / "workers.d"});
    EXPECT_TRUE(loaded.errors.empty()) << loaded.errors.format();
    auto text = read_regular_file(run / "recording.trace", 64u << 20, "a trace");
    EXPECT_TRUE(text) << text.error().message();
    if (!text) return {};
    auto trace = decode_trace_file(*text);
    EXPECT_TRUE(trace) << trace.error().message();
    if (!trace) return {};
    const Config& config = loaded.config;
    PolicyEngine engine(policy_options(config.daemon));
    configure_engine(engine, config.daemon);
    engine.set_default_rules(config.default_rules);
    engine.set_host_rules(config.host_rules);
    for (const auto& w : config.workers) engine.set_worker_rules(w.name, w.rules);
    return replay_trace(*trace, engine);
}

std::string describe(const ReplayItem& item) {
    return item.worker + " rule '" + item.rule + "' " + item.action + " at " +
           std::to_string(item.wall_ms) + ": " + item.detail;
}

// What the daemon decided in each run (worker:action, in order), as its
// scenario asserts: the replay must find these, no more, no fewer.
const std::map<std::string, std::vector<std::string>> kDecided = {
    {"leak-shipped", {"leaker:kill"}},
    {"leak-growth-rules-off", {"leaker:suspend", "leaker:kill"}},
    {"model-load", {}},
    {"second-model-load", {}},
    {"spin", {}},
    {"tiny-host", {"batch:kill"}},
};

TEST(RecordedTracesTest, EachRecordedRunReplaysToTheDaemonsOwnDecisions) {
    auto runs = recordings();
    ASSERT_GE(runs.size(), 5u) << "the recorded runs of tests/vm";
    for (const auto& run : runs) {
        SCOPED_TRACE(run.filename().string());
        ReplayResult r = replay(run, source_root() / "etc/infervisor.yaml");
        EXPECT_GT(r.rounds, 10u);
        EXPECT_FALSE(r.diverged_at_wall_ms.has_value());
        EXPECT_EQ(r.phase_differences, 0u) << r.first_phase_difference->detail;
        EXPECT_GT(r.phases_compared, 0u) << "a recording without the daemon's phases";
        std::vector<std::string> same;
        for (const auto& item : r.items) {
            EXPECT_NE(item.kind, ReplayItem::Kind::would) << "only the replay: " << describe(item);
            EXPECT_NE(item.kind, ReplayItem::Kind::not_taken)
                << "only the daemon: " << describe(item);
            if (item.kind == ReplayItem::Kind::same)
                same.push_back(item.worker + ":" + item.action);
        }
        auto expected = kDecided.find(run.filename().string());
        ASSERT_NE(expected, kDecided.end()) << "a recorded run without its expected decisions";
        EXPECT_EQ(same, expected->second);
    }
}

// The leak as recorded, with near-the-cap's headroom widened from 30s to
// 60s: the replay kills the leaker earlier than the daemon did, and says the
// run departs there.
TEST(RecordedTracesTest, AWiderHeadroomKillsTheRecordedLeakEarlier) {
    auto text = read_regular_file(source_root() / "etc/infervisor.yaml", 1u << 20, "config");
    ASSERT_TRUE(text);
    std::string yaml = *text;
    auto at = yaml.find("memory.headroom < 30s for 8s");
    ASSERT_NE(at, std::string::npos);
    yaml.replace(at, 28, "memory.headroom < 60s for 8s");
    testing::TempDir dir;
    auto main_file = dir.write("infervisor.yaml", yaml);
    ReplayResult r =
        replay(source_root() / "tests/unit/policy/recorded_traces/leak-shipped", main_file);
    const ReplayItem *would = nullptr, *real = nullptr;
    for (const auto& item : r.items) {
        if (item.kind == ReplayItem::Kind::would && !would) would = &item;
        if (item.kind == ReplayItem::Kind::not_taken && !real) real = &item;
    }
    ASSERT_NE(would, nullptr);
    ASSERT_NE(real, nullptr);
    EXPECT_EQ(would->worker, "leaker");
    EXPECT_EQ(would->rule, "near-the-cap");
    EXPECT_EQ(real->rule, "near-the-cap");
    EXPECT_LT(would->wall_ms, real->wall_ms);
    EXPECT_EQ(r.diverged_at_wall_ms, would->wall_ms);
    EXPECT_TRUE(real->after_divergence);
}

}  // namespace
}  // namespace infervisor
