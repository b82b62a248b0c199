// The `checkpoint:` keys of a worker: defaults, values, and errors where they
// stand in the file.
#include "checkpoint/checkpoint_config.h"

#include <gtest/gtest.h>

namespace infervisor {
namespace {

using namespace std::chrono_literals;

struct Parsed {
    CheckpointSpec spec;
    std::vector<std::string> errors;
};

Parsed parse(const std::string& yaml) {
    Parsed out;
    ConfigErrors errors;
    errors.set_file("w.yaml");
    YAML::Node node = YAML::Load(yaml);
    YamlMap map(node, errors, "worker");
    parse_checkpoint_keys(map, out.spec, errors);
    map.finish();
    for (const auto& e : errors.all()) out.errors.push_back(e.format());
    return out;
}

TEST(CheckpointConfig, DefaultsWhenAbsent) {
    auto p = parse("{}\n");
    EXPECT_TRUE(p.errors.empty());
    EXPECT_EQ(p.spec, CheckpointSpec{});
    EXPECT_EQ(p.spec.signal, SIGUSR1);
    EXPECT_EQ(p.spec.timeout, 2min);
    EXPECT_EQ(p.spec.interval, 0s);
    EXPECT_EQ(p.spec.keep, 2);
    // Bounded by default: a quarter of the checkpoint file system.
    EXPECT_EQ(p.spec.quota, (CheckpointQuota{25, 0}));
    EXPECT_EQ(p.spec.max_age, 0s);
}

TEST(CheckpointConfig, QuotaAsSizeOrShareAndMaxAge) {
    auto p = parse("checkpoint: {quota: 20G, max_age: 7d}\n");
    ASSERT_TRUE(p.errors.empty()) << p.errors.front();
    EXPECT_EQ(p.spec.quota, (CheckpointQuota{0, 20ull << 30}));
    EXPECT_EQ(p.spec.max_age, std::chrono::hours(24 * 7));
    auto share = parse("checkpoint: {quota: 10%}\n");
    ASSERT_TRUE(share.errors.empty()) << share.errors.front();
    EXPECT_EQ(share.spec.quota, (CheckpointQuota{10, 0}));
    EXPECT_EQ(parse("checkpoint: {quota: 100%}\n").spec.quota, (CheckpointQuota{100, 0}));
}

TEST(CheckpointConfig, BadQuotaAndMaxAgeAreReportedWhereTheyStand) {
    auto p = parse(
        "checkpoint:\n  quota: 0%\n  max_age: -1s\n"
        "other:\n  checkpoint: {}\n");
    // 0% and the negative duration, each on its line (`other` is unknown).
    ASSERT_GE(p.errors.size(), 2u);
    EXPECT_NE(p.errors[0].find("w.yaml:2:"), std::string::npos) << p.errors[0];
    EXPECT_NE(p.errors[0].find("1% to 100%"), std::string::npos) << p.errors[0];
    EXPECT_NE(p.errors[1].find("w.yaml:3:"), std::string::npos) << p.errors[1];
    for (const char* bad : {"101%", "x%", "%", "1000%", "-5%"}) {
        auto q = parse(std::string("checkpoint:\n  quota: '") + bad + "'\n");
        ASSERT_EQ(q.errors.size(), 1u) << bad;
        EXPECT_NE(q.errors[0].find("w.yaml:2:"), std::string::npos) << q.errors[0];
        EXPECT_EQ(q.spec.quota, CheckpointQuota{}) << bad;  // left at the default
    }
    auto max = parse("checkpoint:\n  quota: max\n");
    ASSERT_EQ(max.errors.size(), 1u);
    EXPECT_NE(max.errors[0].find("cannot be 'max'"), std::string::npos) << max.errors[0];
    auto zero = parse("checkpoint:\n  quota: 0\n");
    ASSERT_EQ(zero.errors.size(), 1u);
    EXPECT_NE(zero.errors[0].find("must be positive"), std::string::npos) << zero.errors[0];
    auto junk = parse("checkpoint:\n  quota: lots\n");
    ASSERT_EQ(junk.errors.size(), 1u);
    EXPECT_NE(junk.errors[0].find("expected a size"), std::string::npos) << junk.errors[0];
}

TEST(CheckpointConfig, EveryKey) {
    auto p = parse("checkpoint: {signal: SIGUSR2, timeout: 30s, interval: 10m, keep: 3}\n");
    ASSERT_TRUE(p.errors.empty()) << p.errors.front();
    EXPECT_EQ(p.spec.signal, SIGUSR2);
    EXPECT_EQ(p.spec.timeout, 30s);
    EXPECT_EQ(p.spec.interval, 10min);
    EXPECT_EQ(p.spec.keep, 3);
}

TEST(CheckpointConfig, BadValuesAreReportedWhereTheyStand) {
    auto p = parse("checkpoint:\n  signal: SIGKILL\n  timeout: 0s\n  keep: 0\n  every: 1m\n");
    ASSERT_EQ(p.errors.size(), 4u);
    EXPECT_NE(p.errors[0].find("w.yaml:2:"), std::string::npos) << p.errors[0];
    EXPECT_NE(p.errors[0].find("cannot be caught"), std::string::npos) << p.errors[0];
    EXPECT_NE(p.errors[1].find("w.yaml:3:"), std::string::npos) << p.errors[1];
    EXPECT_NE(p.errors[1].find("must be positive"), std::string::npos) << p.errors[1];
    EXPECT_NE(p.errors[2].find("w.yaml:4:"), std::string::npos) << p.errors[2];
    EXPECT_NE(p.errors[3].find("every"), std::string::npos) << p.errors[3];
}

TEST(CheckpointConfig, Method) {
    EXPECT_EQ(parse("{}\n").spec.method, CheckpointMethod::cooperative);
    auto p = parse("checkpoint: {method: criu}\n");
    ASSERT_TRUE(p.errors.empty()) << p.errors.front();
    EXPECT_EQ(p.spec.method, CheckpointMethod::criu);
    EXPECT_EQ(parse("checkpoint: {method: cooperative}\n").spec.method,
              CheckpointMethod::cooperative);
    auto bad = parse("checkpoint:\n  method: podman\n");
    ASSERT_EQ(bad.errors.size(), 1u);
    EXPECT_NE(bad.errors[0].find("w.yaml:2:"), std::string::npos) << bad.errors[0];
    EXPECT_NE(bad.errors[0].find("unknown checkpoint method 'podman'"), std::string::npos)
        << bad.errors[0];
    EXPECT_NE(bad.errors[0].find("expected cooperative, criu or llama-server"), std::string::npos)
        << bad.errors[0];
    auto llama = parse("checkpoint: {method: llama-server}\n");
    ASSERT_TRUE(llama.errors.empty()) << llama.errors.front();
    EXPECT_EQ(llama.spec.method, CheckpointMethod::llama_server);
    EXPECT_STREQ(checkpoint_method_name(llama.spec.method), "llama-server");
}

TEST(CheckpointConfig, UnknownSignal) {
    auto p = parse("checkpoint: {signal: SIGFOO}\n");
    ASSERT_EQ(p.errors.size(), 1u);
    EXPECT_NE(p.errors[0].find("unknown signal 'SIGFOO'"), std::string::npos);
}

}  // namespace
}  // namespace infervisor
