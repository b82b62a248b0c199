// `suspend: {method: vllm-sleep, level: N}` as the configuration reads and
// --check-config judges it: the method and level parsed, a vLLM `engine:`
// required, and every bad value reported at its line with what vLLM needs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/config_loader.h"

namespace infervisor {
namespace {

using ::testing::HasSubstr;

std::string vllm_worker(const std::string& suspend, const std::string& engine) {
    return "workers:\n  - name: vllm\n    command: [/usr/bin/vllm, serve, m, "
           "--enable-sleep-mode]\n    memory: {max: 8G}\n" +
           suspend + engine;
}

const std::string kVllmEngine = "    engine: {kind: vllm, port: 8000}\n";

TEST(VllmSleepConfig, TheMethodAndLevelAreRead) {
    auto loaded = load_config_text(
        vllm_worker("    suspend: {method: vllm-sleep, level: 2}\n", kVllmEngine), "v.yaml");
    ASSERT_TRUE(loaded.ok()) << loaded.errors.format();
    ASSERT_EQ(loaded.config.workers.size(), 1u);
    EXPECT_EQ(loaded.config.workers[0].suspend.method, SuspendMethod::vllm_sleep);
    EXPECT_EQ(loaded.config.workers[0].suspend.level, 2);

    auto plain = load_config_text(vllm_worker("", kVllmEngine), "v.yaml");
    ASSERT_TRUE(plain.ok()) << plain.errors.format();
    EXPECT_EQ(plain.config.workers[0].suspend.method, SuspendMethod::freeze);
    EXPECT_EQ(plain.config.workers[0].suspend.level, 1);
}

TEST(VllmSleepConfig, DefaultsGiveItToEveryWorker) {
    auto loaded = load_config_text(
        "defaults:\n  suspend: {method: vllm-sleep}\n  engine: {kind: vllm, port: 8000}\n" +
            vllm_worker("", ""),
        "v.yaml");
    ASSERT_TRUE(loaded.ok()) << loaded.errors.format();
    EXPECT_EQ(loaded.config.workers[0].suspend.method, SuspendMethod::vllm_sleep);
    EXPECT_EQ(loaded.config.workers[0].suspend.level, 1);
}

TEST(VllmSleepConfig, ItNeedsAVllmEngineAndSaysWhatVllmNeeds) {
    for (const std::string& engine :
         {std::string(), std::string("    engine: {kind: llama-server, port: 8080}\n")}) {
        auto loaded =
            load_config_text(vllm_worker("    suspend: {method: vllm-sleep}\n", engine), "v.yaml");
        std::string errors = loaded.errors.format();
        EXPECT_THAT(errors, HasSubstr("v.yaml:5:"));  // the suspend key's line
        EXPECT_THAT(errors, HasSubstr("suspend method vllm-sleep needs the server's address"));
        EXPECT_THAT(errors, HasSubstr("'engine: {kind: vllm, port: PORT}'"));
        EXPECT_THAT(errors, HasSubstr("--enable-sleep-mode"));
        EXPECT_THAT(errors, HasSubstr("VLLM_SERVER_DEV_MODE=1"));
    }
}

TEST(VllmSleepConfig, BadValuesAreReportedWhereTheyStand) {
    auto level = load_config_text(
        vllm_worker("    suspend: {method: vllm-sleep, level: 3}\n", kVllmEngine), "v.yaml");
    EXPECT_THAT(level.errors.format(), HasSubstr("v.yaml:5:"));
    EXPECT_THAT(level.errors.format(), HasSubstr("suspend level must be 1"));
    EXPECT_THAT(level.errors.format(), HasSubstr("not '3'"));

    auto method =
        load_config_text(vllm_worker("    suspend: {method: hibernate}\n", kVllmEngine), "v.yaml");
    EXPECT_THAT(method.errors.format(), HasSubstr("v.yaml:5:"));
    EXPECT_THAT(method.errors.format(),
                HasSubstr("unknown suspend method 'hibernate'; expected freeze or vllm-sleep"));

    auto key = load_config_text(
        vllm_worker("    suspend: {method: vllm-sleep, levl: 1}\n", kVllmEngine), "v.yaml");
    EXPECT_THAT(key.errors.format(), HasSubstr("levl"));

    auto scalar = load_config_text(vllm_worker("    suspend: vllm-sleep\n", kVllmEngine), "v.yaml");
    EXPECT_FALSE(scalar.ok());
    EXPECT_THAT(scalar.errors.format(), HasSubstr("'suspend'"));
}

}  // namespace
}  // namespace infervisor
