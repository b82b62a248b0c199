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
}

TEST(CheckpointConfig, UnknownSignal) {
    auto p = parse("checkpoint: {signal: SIGFOO}\n");
    ASSERT_EQ(p.errors.size(), 1u);
    EXPECT_NE(p.errors[0].find("unknown signal 'SIGFOO'"), std::string::npos);
}

}  // namespace
}  // namespace infervisor
