// `checkpoint: {method: llama-server}` as --check-config judges it: the
// server's address (engine:), a way to know it is ready, and its
// --slot-save-path, which must be the worker's staging dir.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/config_loader.h"

namespace infervisor {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kStaging = "/var/lib/infervisor/checkpoints/llama/staging";

std::string llama_worker(const std::string& args, const std::string& extra) {
    return "workers:\n  - name: llama\n    command: [/usr/bin/llama-server, -m, /m.gguf" + args +
           "]\n    memory: {max: 8G}\n    checkpoint: {method: llama-server}\n" + extra;
}

const std::string kEngine = "    engine: {kind: llama-server, port: 8080}\n";
const std::string kProbe =
    "    probes:\n      startup: {kind: http, port: 8080, path: /health, interval: 2s}\n";

TEST(LlamaCheckpointConfig, AWorkerWithAllItNeedsIsAccepted) {
    for (std::string args : {std::string(", --slot-save-path, ") + kStaging,
                             std::string(", --slot-save-path, ") + kStaging + "/",
                             std::string(", --slot-save-path=") + kStaging}) {
        auto loaded = load_config_text(llama_worker(args, kEngine + kProbe), "l.yaml");
        EXPECT_TRUE(loaded.ok()) << args << ": " << loaded.errors.format();
    }
}

TEST(LlamaCheckpointConfig, TheSlotSavePathMustBeTheStagingDir) {
    auto missing = load_config_text(llama_worker("", kEngine + kProbe), "l.yaml");
    EXPECT_THAT(missing.errors.format(), HasSubstr("the command must pass '--slot-save-path " +
                                                   std::string(kStaging) + "'"));
    auto other = load_config_text(
        llama_worker(", --slot-save-path, /var/cache/slots", kEngine + kProbe), "l.yaml");
    EXPECT_THAT(other.errors.format(),
                HasSubstr("--slot-save-path is '/var/cache/slots'; it must be '" +
                          std::string(kStaging) + "'"));
    // The staging dir follows state_dir.
    auto moved = load_config_text(
        "state_dir: /srv/iv\n" +
            llama_worker(", --slot-save-path, /srv/iv/checkpoints/llama/staging", kEngine + kProbe),
        "l.yaml");
    EXPECT_TRUE(moved.ok()) << moved.errors.format();
}

TEST(LlamaCheckpointConfig, TheServersAddressAndReadinessAreRequired) {
    std::string args = std::string(", --slot-save-path, ") + kStaging;
    auto no_engine = load_config_text(llama_worker(args, kProbe), "l.yaml");
    EXPECT_THAT(no_engine.errors.format(),
                HasSubstr("checkpoint method llama-server needs the server's address"));
    auto vllm = load_config_text(
        llama_worker(args, "    engine: {kind: vllm, port: 8080}\n" + kProbe), "l.yaml");
    EXPECT_THAT(vllm.errors.format(),
                HasSubstr("checkpoint method llama-server needs the server's address"));
    auto no_probe = load_config_text(llama_worker(args, kEngine), "l.yaml");
    EXPECT_THAT(no_probe.errors.format(), HasSubstr("add a startup probe"));
    auto notify = load_config_text(llama_worker(args, kEngine + "    notify: true\n"), "l.yaml");
    EXPECT_TRUE(notify.ok()) << notify.errors.format();
}

// A multimodal server answers every slot action with 501: refused here,
// in either spelling of the flag, rather than at every checkpoint.
TEST(LlamaCheckpointConfig, AMultimodalServerIsRefused) {
    std::string args = std::string(", --slot-save-path, ") + kStaging;
    for (std::string flag : {", --mmproj, /m/mmproj.gguf", ", -mm, /m/mmproj.gguf",
                             ", --mmproj-url=https://h/mmproj.gguf"}) {
        auto loaded = load_config_text(llama_worker(args + flag, kEngine + kProbe), "l.yaml");
        EXPECT_THAT(loaded.errors.format(), HasSubstr("a multimodal llama-server refuses to save "
                                                      "or restore slots (501)"))
            << flag;
    }
    // --mmproj-offload and --no-mmproj are other flags.
    auto other = load_config_text(llama_worker(args + ", --no-mmproj", kEngine + kProbe), "l.yaml");
    EXPECT_TRUE(other.ok()) << other.errors.format();
}

// engine.metrics on a llama-server without --metrics: a warning (a wrapper
// script may add the flag), at config check.
TEST(LlamaCheckpointConfig, MetricsWithoutTheServersFlagAreAWarning) {
    std::string args = std::string(", --slot-save-path, ") + kStaging;
    const std::string metrics = "    engine: {kind: llama-server, port: 8080, metrics: /metrics}\n";
    auto without = load_config_text(llama_worker(args, metrics + kProbe), "l.yaml");
    EXPECT_TRUE(without.ok()) << without.errors.format();
    auto said = [](const LoadedConfig& loaded) {
        for (const auto& w : loaded.errors.warnings())
            if (w.message.find("the command does not pass '--metrics'") != std::string::npos)
                return true;
        return false;
    };
    EXPECT_TRUE(said(without));
    auto with = load_config_text(llama_worker(args + ", --metrics", metrics + kProbe), "l.yaml");
    EXPECT_TRUE(with.ok()) << with.errors.format();
    EXPECT_FALSE(said(with));
}

TEST(LlamaCheckpointConfig, OtherMethodsNeedNoneOfIt) {
    auto loaded = load_config_text(
        "workers:\n  - name: w\n    command: [/bin/true]\n    memory: {max: 64M}\n"
        "    checkpoint: {method: cooperative}\n",
        "w.yaml");
    EXPECT_THAT(loaded.errors.format(), Not(HasSubstr("llama-server")));
}

}  // namespace
}  // namespace infervisor
