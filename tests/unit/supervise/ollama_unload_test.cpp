// WorkerOllamaUnload (the preempt ladder's unload) against FakeOllama, a
// server in this process that answers as Ollama's routes do: what is asked
// for, in which order, with which body, and what the outcome says — done,
// nothing loaded, still loaded (a model a request holds), or the server's
// own error.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>

#include "fake_ollama.h"
#include "supervise/worker_ollama_unload.h"

namespace infervisor::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

class OllamaUnload : public ::testing::Test {
  protected:
    // Runs one unload to its end.
    Result<WorkerOllamaUnload::Outcome> unload(Duration timeout = 2s) {
        std::optional<Result<WorkerOllamaUnload::Outcome>> got;
        WorkerOllamaUnload::Server s{EngineSpec{.kind = EngineKind::ollama, .port = server_.port()},
                                     "", timeout};
        unloader_.unload(s, [&](Result<WorkerOllamaUnload::Outcome> r) { got = std::move(r); });
        while (!got && io_.run_one()) {
        }
        io_.restart();
        return std::move(*got);
    }
    static std::vector<std::string> names(const std::vector<OllamaModel>& models) {
        std::vector<std::string> out;
        for (const auto& m : models) out.push_back(m.name);
        return out;
    }

    boost::asio::io_context io_;
    FakeOllama server_{io_};
    WorkerOllamaUnload unloader_{io_};
};

TEST_F(OllamaUnload, UnloadsEveryLoadedModelAsOllamaStopDoesAndSeesThemGo) {
    server_.load("llama3.2:latest", 3'300'000'000);
    server_.load("nomic-embed-text:latest", 600'000'000);
    auto outcome = unload();
    ASSERT_TRUE(outcome) << outcome.error().message();
    EXPECT_THAT(names(outcome->unloaded),
                ElementsAre("llama3.2:latest", "nomic-embed-text:latest"));
    EXPECT_EQ(outcome->unloaded[0].size, 3'300'000'000u);
    EXPECT_TRUE(outcome->still_loaded.empty());
    EXPECT_FALSE(server_.is_loaded("llama3.2:latest"));
    EXPECT_THAT(server_.lines, ElementsAre("GET /api/ps", "POST /api/generate",
                                           "POST /api/generate", "GET /api/ps"));
    ASSERT_EQ(server_.bodies.size(), 2u);
    auto body = nlohmann::json::parse(server_.bodies[0]);
    EXPECT_EQ(body["model"], "llama3.2:latest");
    EXPECT_EQ(body["keep_alive"], 0);
    EXPECT_FALSE(body.contains("prompt")) << "an empty prompt is what makes it an unload";
}

TEST_F(OllamaUnload, NothingLoadedIsSaidAndNothingIsAsked) {
    auto outcome = unload();
    ASSERT_TRUE(outcome) << outcome.error().message();
    EXPECT_TRUE(outcome->nothing_loaded());
    EXPECT_THAT(server_.lines, ElementsAre("GET /api/ps"));
}

// Ollama unloads a model a request holds only when that request ends: the
// unload waits for it within its bound, polling /api/ps ...
TEST_F(OllamaUnload, AModelBusyWithARequestIsWaitedForAndGoneWhenItEnds) {
    server_.load("llama3.2:latest", 3'300'000'000);
    server_.mark_busy("llama3.2:latest");
    boost::asio::steady_timer request_ends(io_);
    request_ends.expires_after(500ms);
    request_ends.async_wait([&](auto) { server_.release("llama3.2:latest"); });
    auto outcome = unload(30s);
    ASSERT_TRUE(outcome) << outcome.error().message();
    EXPECT_THAT(names(outcome->unloaded), ElementsAre("llama3.2:latest"));
    EXPECT_TRUE(outcome->still_loaded.empty());
    EXPECT_GE(server_.lines.size(), 4u) << "polled /api/ps until it was gone";
}

// ... and says what is still loaded when the bound passes.
TEST_F(OllamaUnload, AModelStillBusyAtTheBoundIsReportedStillLoaded) {
    server_.load("llama3.2:latest", 3'300'000'000);
    server_.load("qwen2.5:0.5b", 400'000'000);
    server_.mark_busy("llama3.2:latest");
    auto outcome = unload(800ms);
    ASSERT_TRUE(outcome) << outcome.error().message();
    EXPECT_THAT(names(outcome->unloaded), ElementsAre("qwen2.5:0.5b"));
    EXPECT_THAT(names(outcome->still_loaded), ElementsAre("llama3.2:latest"));
    EXPECT_FALSE(outcome->nothing_loaded());
}

TEST_F(OllamaUnload, AServerThatDoesNotAnswerFailsWithinTheBound) {
    server_.silent = true;
    auto outcome = unload(300ms);
    ASSERT_FALSE(outcome);
    EXPECT_THAT(outcome.error().message(), HasSubstr("GET /api/ps"));
}

TEST_F(OllamaUnload, ACancelledUnloadNeverCallsBack) {
    server_.load("llama3.2:latest", 1000);
    bool called = false;
    unloader_.unload({EngineSpec{.kind = EngineKind::ollama, .port = server_.port()}, "", 2s},
                     [&](auto) { called = true; });
    unloader_.cancel();
    io_.run_for(300ms);
    EXPECT_FALSE(called);
}

}  // namespace
}  // namespace infervisor::testing
