// Ollama's routes for the preempt ladder's unload (engine/ollama_models.h):
// the requests as `ollama stop` sends them, its answers from fixtures
// (tests/unit/engine/fixtures/ollama-*.json, as server/routes.go writes
// them), and answers that are not what Ollama sends.
#include "engine/ollama_models.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine_answers.h"

namespace infervisor {
namespace {

using ::testing::HasSubstr;

EngineSpec ollama() {
    EngineSpec e;
    e.kind = EngineKind::ollama;
    e.port = 11434;
    return e;
}

TEST(OllamaRequests, PsIsAGetAndTheUnloadIsWhatOllamaStopSends) {
    auto ps = ollama_ps_request(ollama(), "");
    EXPECT_EQ(ps.method, "GET");
    EXPECT_EQ(ps.target, "/api/ps");
    EXPECT_EQ(ps.port, 11434);
    EXPECT_EQ(ps.max_body, kMaxOllamaAnswer);
    EXPECT_TRUE(ps.headers.empty()) << "no key, no Authorization";

    auto unload = ollama_unload_request(ollama(), "k", "llama3.2:latest");
    EXPECT_EQ(unload.method, "POST");
    EXPECT_EQ(unload.target, "/api/generate");
    auto body = nlohmann::json::parse(unload.body);
    EXPECT_EQ(body["model"], "llama3.2:latest");
    EXPECT_EQ(body["keep_alive"], 0);
    EXPECT_FALSE(body.contains("prompt"));
    EXPECT_THAT(unload.headers, ::testing::Contains(std::pair<std::string, std::string>(
                                    "Authorization", "Bearer k")));
}

TEST(OllamaRequests, AModelNameIsSentAsJsonNotSpliced) {
    auto unload = ollama_unload_request(ollama(), "", "a\"b");
    EXPECT_EQ(nlohmann::json::parse(unload.body)["model"], "a\"b");
}

TEST(OllamaPs, ReadsTheLoadedModelsWithTheirSizes) {
    auto models =
        parse_ollama_ps(testing::json_answer(200, testing::engine_fixture("ollama-ps.json")));
    ASSERT_TRUE(models) << models.error().message();
    ASSERT_EQ(models->size(), 2u);
    EXPECT_EQ((*models)[0], (OllamaModel{"llama3.2:latest", 3355443200u, 3355443200u}));
    EXPECT_EQ((*models)[1], (OllamaModel{"nomic-embed-text:latest", 621805568u, 0u}));
    auto none =
        parse_ollama_ps(testing::json_answer(200, testing::engine_fixture("ollama-ps-empty.json")));
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->empty());
}

TEST(OllamaPs, RefusesAnswersOllamaDoesNotGive) {
    auto error_of = [](int status, std::string body) {
        auto r = parse_ollama_ps(testing::json_answer(status, std::move(body)));
        return r ? std::string("accepted") : r.error().message();
    };
    EXPECT_THAT(error_of(200, "[]"), HasSubstr("not a JSON object"));
    EXPECT_THAT(error_of(200, R"({"models": {}})"), HasSubstr("\"models\" is not a list"));
    EXPECT_THAT(error_of(200, R"({"models": [7]})"), HasSubstr("not a JSON object"));
    EXPECT_THAT(error_of(200, R"({"models": [{"size": 5}]})"), HasSubstr("usable name"));
    EXPECT_THAT(error_of(200, R"({"models": [{"name": "a b"}]})"), HasSubstr("usable name"));
    EXPECT_THAT(error_of(200, R"({"models": [{"name": ""}]})"), HasSubstr("usable name"));
    EXPECT_THAT(error_of(200, R"({"models": [{"name": ")" + std::string(300, 'm') + R"("}]})"),
                HasSubstr("usable name"));
    std::string many = R"({"models": [)";
    for (int i = 0; i < 65; ++i) many += std::string(i ? "," : "") + R"({"name": "m"})";
    EXPECT_THAT(error_of(200, many + "]}"), HasSubstr("65 models listed, more than 64"));
    EXPECT_THAT(error_of(404, "404 page not found"), HasSubstr("is this an Ollama server?"));
    EXPECT_THAT(error_of(200, "{"), HasSubstr("GET /api/ps"));
    HttpAnswer refused;
    refused.error = "connect: Connection refused";
    auto r = parse_ollama_ps(refused);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message(), "GET /api/ps: connect: Connection refused");
}

TEST(OllamaPs, ANegativeOrFractionalSizeIsUnknownNotWrapped) {
    auto models = parse_ollama_ps(
        testing::json_answer(200, R"({"models": [{"name": "m", "size": -1, "size_vram": 1.5}]})"));
    ASSERT_TRUE(models);
    EXPECT_EQ((*models)[0].size, std::nullopt);
    EXPECT_EQ((*models)[0].size_vram, std::nullopt);
}

TEST(OllamaUnloadAnswer, DoneIsTheUnloadBranchsAnswerAnErrorSaysOllamasWords) {
    EXPECT_TRUE(check_ollama_unloaded(
        testing::json_answer(200, testing::engine_fixture("ollama-unload.json")), "llama3.2"));
    auto missing = check_ollama_unloaded(
        testing::json_answer(404, testing::engine_fixture("ollama-error-not-found.json")),
        "llama9");
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().message(), "unload 'llama9': HTTP 404: model 'llama9' not found");
    auto not_done = check_ollama_unloaded(testing::json_answer(200, R"({"done": false})"), "m");
    ASSERT_FALSE(not_done);
    EXPECT_THAT(not_done.error().message(), HasSubstr("does not say \"done\": true"));
    EXPECT_FALSE(check_ollama_unloaded(testing::json_answer(200, R"({"done": "true"})"), "m"));
}

}  // namespace
}  // namespace infervisor
