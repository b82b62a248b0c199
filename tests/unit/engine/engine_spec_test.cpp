// A worker's `engine:` key: what it holds, what it inherits from
// `defaults:`, and every bad value reported where it stands.
#include "engine/engine_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/config_loader.h"
#include "support/temp_dir.h"

namespace infervisor {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string worker_with(const std::string& engine, const std::string& extra = "") {
    return "workers:\n  - name: w\n    command: [/bin/true]\n    memory: {max: 64M}\n" + extra +
           "    engine:\n" + engine;
}

TEST(EngineSpec, ParsesEveryKey) {
    testing::TempDir dir;
    auto key = dir.write("llama_key", "s3cret\n");
    auto loaded =
        load_config_text(worker_with(R"(      kind: llama-server
      host: "::1"
      port: 8080
      tls: true
      api_key: llama_key
      metrics: /metrics
      timeout: 5s
)",
                                     "    credentials: {llama_key: " + key.string() + "}\n"),
                         "e.yaml");
    ASSERT_TRUE(loaded.ok()) << loaded.errors.format();
    const auto& engine = loaded.config.workers.at(0).engine;
    ASSERT_TRUE(engine);
    EXPECT_EQ(engine->kind, EngineKind::llama_server);
    EXPECT_EQ(engine->host, "::1");
    EXPECT_EQ(engine->port, 8080);
    EXPECT_TRUE(engine->tls);
    EXPECT_EQ(engine->api_key, "llama_key");
    EXPECT_EQ(engine->metrics, "/metrics");
    EXPECT_EQ(engine->timeout, 5s);
}

TEST(EngineSpec, DefaultsAreLocalPlainHttpWithoutMetrics) {
    auto loaded = load_config_text(worker_with("      port: 8000\n"), "e.yaml");
    ASSERT_TRUE(loaded.ok()) << loaded.errors.format();
    const auto& engine = loaded.config.workers.at(0).engine;
    ASSERT_TRUE(engine);
    EXPECT_EQ(*engine, (EngineSpec{.port = 8000}));
    EXPECT_EQ(engine->kind, EngineKind::generic);
    EXPECT_EQ(engine->host, "127.0.0.1");
    EXPECT_FALSE(engine->metrics);
    EXPECT_EQ(engine->timeout, 2s);
    auto none = load_config_text(
        "workers:\n  - name: w\n    command: [/bin/true]\n    memory: {max: 64M}\n", "e.yaml");
    ASSERT_TRUE(none.ok()) << none.errors.format();
    EXPECT_FALSE(none.config.workers.at(0).engine);
}

TEST(EngineSpec, KindNamesRoundTrip) {
    EXPECT_EQ(engine_kind_name(EngineKind::llama_server), "llama-server");
    EXPECT_EQ(engine_kind_name(EngineKind::vllm), "vllm");
    EXPECT_EQ(engine_kind_name(EngineKind::ollama), "ollama");
    EXPECT_EQ(engine_kind_name(EngineKind::generic), "generic");
    for (const char* kind : {"llama-server", "vllm", "ollama", "generic"}) {
        auto loaded = load_config_text(
            worker_with("      kind: " + std::string(kind) + "\n      port: 1\n"), "e.yaml");
        ASSERT_TRUE(loaded.ok()) << loaded.errors.format();
        EXPECT_EQ(engine_kind_name(loaded.config.workers.at(0).engine->kind), kind);
    }
}

TEST(EngineSpec, BadValuesAreReportedWhereTheyStand) {
    auto loaded = load_config_text(worker_with(R"(      kind: tgi
      host: localhost
      port: 70000
      tls: maybe
      metrics: metrics
      timeout: 0s
      scrape: yes
)"),
                                   "e.yaml");
    std::string all = loaded.errors.format();
    EXPECT_THAT(all, HasSubstr("e.yaml:6:13: engine kind must be llama-server, vllm, ollama or "
                               "generic, not 'tgi'"));
    EXPECT_THAT(all, HasSubstr("e.yaml:7:13: engine 'host' must be an IP address such as "
                               "127.0.0.1 or ::1 (no name lookup), not 'localhost'"));
    EXPECT_THAT(all, HasSubstr("e.yaml:8:"));
    EXPECT_THAT(all, HasSubstr("'port'"));
    EXPECT_THAT(all, HasSubstr("e.yaml:9:"));
    EXPECT_THAT(all, HasSubstr("e.yaml:10:16: engine 'metrics' must be a path starting with '/'"));
    EXPECT_THAT(all, HasSubstr("e.yaml:11:16: engine 'timeout' must be above 0s"));
    EXPECT_THAT(all, HasSubstr("e.yaml:12:7: unknown key 'scrape' in 'engine'"));
    auto not_a_map = load_config_text(worker_with("      - 8080\n"), "e.yaml");
    EXPECT_THAT(not_a_map.errors.format(), HasSubstr("'engine' must be a mapping"));
    auto slow = load_config_text(worker_with("      port: 1\n      timeout: 11min\n"), "e.yaml");
    EXPECT_THAT(slow.errors.format(),
                HasSubstr("'timeout' in 'engine' must be at most 10m, not 11min"));
}

TEST(EngineSpec, ThePortIsRequiredOfEachWorker) {
    auto loaded = load_config_text(worker_with("      kind: vllm\n"), "e.yaml");
    EXPECT_THAT(loaded.errors.format(),
                HasSubstr("e.yaml:5:5: worker 'w': engine: 'port' is required"));
}

TEST(EngineSpec, ApiKeyMustNameACredentialOfTheWorker) {
    auto loaded =
        load_config_text(worker_with("      port: 8080\n      api_key: vllm_key\n"), "e.yaml");
    EXPECT_THAT(loaded.errors.format(),
                HasSubstr("e.yaml:5:5: worker 'w': engine: 'api_key' names the credential "
                          "'vllm_key', which the worker does not have: add it under "
                          "'credentials:'"));
}

TEST(EngineSpec, AWorkerAddsToAndOverridesTheDefaults) {
    auto loaded = load_config_text(R"(defaults:
  engine: {kind: vllm, metrics: /metrics, timeout: 3s}
workers:
  - name: a
    command: [/bin/true]
    memory: {max: 64M}
    engine: {port: 8000}
  - name: b
    command: [/bin/true]
    memory: {max: 64M}
    engine: {port: 8001, kind: generic, host: 127.0.0.2}
  - name: c
    command: [/bin/true]
    memory: {max: 64M}
    engine: none
)",
                                   "e.yaml");
    ASSERT_TRUE(loaded.ok()) << loaded.errors.format();
    const auto& a = loaded.config.workers.at(0).engine;
    const auto& b = loaded.config.workers.at(1).engine;
    ASSERT_TRUE(a && b);
    EXPECT_EQ(
        *a,
        (EngineSpec{.kind = EngineKind::vllm, .port = 8000, .metrics = "/metrics", .timeout = 3s}));
    EXPECT_EQ(*b, (EngineSpec{.kind = EngineKind::generic,
                              .host = "127.0.0.2",
                              .port = 8001,
                              .metrics = "/metrics",
                              .timeout = 3s}));
    EXPECT_FALSE(loaded.config.workers.at(2).engine);
}

TEST(EngineSpec, ADefaultsEngineWithoutPortIsAnErrorOnlyForAWorkerThatAddsNone) {
    auto loaded = load_config_text(R"(defaults:
  engine: {kind: llama-server}
workers:
  - name: a
    command: [/bin/true]
    memory: {max: 64M}
)",
                                   "e.yaml");
    EXPECT_THAT(loaded.errors.format(), HasSubstr("worker 'a': engine: 'port' is required"));
    EXPECT_THAT(loaded.errors.format(), Not(HasSubstr("'defaults'")));
}

TEST(EngineSpec, RulesOnEngineSeriesNeedEngineMetrics) {
    const std::string stuck =
        "    rules:\n"
        "      - name: stuck\n"
        "        when: engine.rate(llamacpp:tokens_predicted_total) == 0 and "
        "engine.llamacpp:requests_processing > 0 for 2m\n"
        "        action: kill\n";
    auto without = load_config_text(worker_with("      port: 8080\n", stuck), "e.yaml");
    EXPECT_THAT(without.errors.format(),
                HasSubstr("e.yaml:5:5: worker 'w': rule 'stuck' reads "
                          "engine.rate(llamacpp:tokens_predicted_total), but the worker has no "
                          "engine.metrics to scrape: add the server's metrics endpoint, e.g. "
                          "engine: {port: 8080, metrics: /metrics}"));
    auto with = load_config_text(worker_with("      port: 8080\n      metrics: /metrics\n", stuck),
                                 "e.yaml");
    EXPECT_TRUE(with.ok()) << with.errors.format();
    // A default rule counts for every worker it applies to.
    auto defaults = load_config_text(R"(defaults:
  rules:
    - {name: slow, when: engine.rate(vllm:generation_tokens_total) < 1 for 1m, action: log}
workers:
  - name: scraped
    command: [/bin/true]
    memory: {max: 64M}
    engine: {port: 8000, metrics: /metrics}
  - name: plain
    command: [/bin/true]
    memory: {max: 64M}
)",
                                     "e.yaml");
    EXPECT_THAT(defaults.errors.format(), HasSubstr("e.yaml:9:5: worker 'plain': rule 'slow'"));
    EXPECT_THAT(defaults.errors.format(), Not(HasSubstr("worker 'scraped'")));
}

}  // namespace
}  // namespace infervisor
