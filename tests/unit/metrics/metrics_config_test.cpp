#include "config/metrics_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/config_loader.h"

namespace infervisor {
namespace {

using ::testing::ElementsAre;

std::vector<std::string> errors_of(const char* text) {
    auto loaded = load_config_text(text, "test.yaml");
    std::vector<std::string> out;
    for (const auto& e : loaded.errors.all()) out.push_back(e.format());
    return out;
}

TEST(MetricsConfig, OffByDefaultWithAnHourOfHistory) {
    auto loaded = load_config_text("", "e.yaml");
    EXPECT_FALSE(loaded.config.daemon.metrics.exported());
    EXPECT_EQ(loaded.config.daemon.metrics.history, std::chrono::hours(1));
    EXPECT_EQ(loaded.config.daemon.metrics.textfile_interval, std::chrono::seconds(15));
}

TEST(MetricsConfig, ParsesEveryKey) {
    auto loaded = load_config_text(R"(metrics:
  textfile: /var/lib/prometheus/node-exporter/infervisor.prom
  textfile_interval: 1m
  listen: "[::1]:9816"
  history: 30m
)",
                                   "test.yaml");
    ASSERT_TRUE(loaded.ok()) << loaded.errors.format();
    const MetricsSettings& m = loaded.config.daemon.metrics;
    EXPECT_EQ(m.textfile, "/var/lib/prometheus/node-exporter/infervisor.prom");
    EXPECT_EQ(m.listen_address, "::1");
    EXPECT_EQ(m.listen_port, 9816);
    EXPECT_EQ(m.history, std::chrono::minutes(30));
    EXPECT_EQ(m.textfile_interval, std::chrono::minutes(1));
    EXPECT_TRUE(m.exported());
}

TEST(MetricsConfig, ErrorsSayWhereAndWhat) {
    EXPECT_THAT(errors_of(R"(metrics:
  textfile: metrics.prom
  listen: localhost:9816
  history: 2d
  port: 1
)"),
                ElementsAre("test.yaml:2:13: metrics textfile must be an absolute path, not "
                            "'metrics.prom'",
                            "test.yaml:3:11: metrics listen must be ADDRESS:PORT with an IP "
                            "address, e.g. 127.0.0.1:9816 or [::1]:9816, not 'localhost:9816'",
                            "test.yaml:4:12: metrics history must be at most 24h, not 2d",
                            "test.yaml:5:3: unknown key 'port' in 'metrics'"));
    EXPECT_THAT(errors_of("metrics: {textfile: /var/lib/x.txt}\n"),
                ElementsAre("test.yaml:1:21: metrics textfile must end in .prom (node_exporter's "
                            "textfile collector reads only *.prom), not '/var/lib/x.txt'"));
    EXPECT_THAT(errors_of("metrics:\n  textfile_interval: 500ms\n"),
                ElementsAre("test.yaml:2:22: metrics textfile_interval must be 1s-10m, not 500ms"));
    EXPECT_THAT(errors_of("metrics:\n  textfile_interval: 1h\n"),
                ElementsAre("test.yaml:2:22: metrics textfile_interval must be 1s-10m, not 1h"));
    EXPECT_THAT(errors_of("metrics: [1]\n"),
                ElementsAre("test.yaml:1:10: 'metrics' must be a mapping, not a list"));
}

TEST(MetricsConfig, ListenAddresses) {
    EXPECT_EQ(parse_listen_address("127.0.0.1:9816")->address, "127.0.0.1");
    EXPECT_EQ(parse_listen_address("0.0.0.0:1")->port, 1);
    EXPECT_FALSE(parse_listen_address("::1:9816"));  // IPv6 needs brackets
    EXPECT_FALSE(parse_listen_address("127.0.0.1"));
    EXPECT_FALSE(parse_listen_address("127.0.0.1:0"));
    EXPECT_FALSE(parse_listen_address("127.0.0.1:65536"));
    EXPECT_FALSE(parse_listen_address("127.0.0.1:80x"));
    EXPECT_FALSE(parse_listen_address(":80"));
    EXPECT_FALSE(parse_listen_address("[]:80"));
}

}  // namespace
}  // namespace infervisor
