// llama-server's slot API (engine/llama_slots.h): the requests as the server
// routes them, and its answers and error answers as its source writes them
// (fixtures/llama-server-*.json, see fixtures/README.md), plus answers that
// are not what llama-server sends.
#include "engine/llama_slots.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "engine_answers.h"
#include "support/temp_dir.h"

namespace infervisor {
namespace {

using ::testing::HasSubstr;

EngineSpec llama_engine() {
    EngineSpec e;
    e.kind = EngineKind::llama_server;
    e.port = 8080;
    return e;
}

TEST(LlamaSlots, RequestsAreTheServersRoutes) {
    auto props = llama_props_request(llama_engine(), "");
    EXPECT_EQ(props.method, "GET");
    EXPECT_EQ(props.target, "/props");
    EXPECT_EQ(props.port, 8080);
    EXPECT_EQ(props.host, "127.0.0.1");
    EXPECT_EQ(props.max_body, kMaxLlamaAnswer);
    EXPECT_TRUE(props.headers.empty());

    auto slots = llama_slots_request(llama_engine(), "sekret");
    EXPECT_EQ(slots.method, "GET");
    EXPECT_EQ(slots.target, "/slots");
    ASSERT_EQ(slots.headers.size(), 1u);
    EXPECT_EQ(slots.headers[0].first, "Authorization");
    EXPECT_EQ(slots.headers[0].second, "Bearer sekret");

    auto save = llama_slot_action_request(llama_engine(), "", 3, SlotAction::save, "slot-3.bin");
    EXPECT_EQ(save.method, "POST");
    EXPECT_EQ(save.target, "/slots/3?action=save");
    EXPECT_EQ(save.body, R"({"filename":"slot-3.bin"})");
    auto restore =
        llama_slot_action_request(llama_engine(), "", 0, SlotAction::restore, "slot-0.bin");
    EXPECT_EQ(restore.target, "/slots/0?action=restore");
    EXPECT_EQ(restore.body, R"({"filename":"slot-0.bin"})");
    auto erase = llama_slot_action_request(llama_engine(), "", 1, SlotAction::erase, "");
    EXPECT_EQ(erase.target, "/slots/1?action=erase");
    EXPECT_EQ(erase.body, "{}");
    EXPECT_EQ(llama_slot_file_name(12), "slot-12.bin");
}

TEST(LlamaSlots, PropsAsTheServerWritesThem) {
    auto props = parse_llama_props(
        testing::json_answer(200, testing::engine_fixture("llama-server-props.json")));
    ASSERT_TRUE(props) << props.error().message();
    EXPECT_EQ(props->model_path, "/srv/models/qwen2.5-0.5b-instruct-q4_k_m.gguf");
    EXPECT_EQ(props->build_info, "b6800-1f5accb8");
    EXPECT_EQ(props->n_ctx, 4096);
    EXPECT_EQ(props->total_slots, 2);
}

TEST(LlamaSlots, PropsWithoutWhatARestoreIsJudgedByAreRefused) {
    auto no_path = parse_llama_props(
        testing::json_answer(200, R"({"default_generation_settings":{"n_ctx":512}})"));
    ASSERT_FALSE(no_path);
    EXPECT_THAT(no_path.error().message(), HasSubstr("no \"model_path\""));
    auto no_ctx = parse_llama_props(testing::json_answer(200, R"({"model_path":"/m.gguf"})"));
    ASSERT_FALSE(no_ctx);
    EXPECT_THAT(no_ctx.error().message(), HasSubstr("default_generation_settings.n_ctx"));
    auto text_ctx = parse_llama_props(testing::json_answer(
        200, R"({"model_path":"/m.gguf","default_generation_settings":{"n_ctx":"512"}})"));
    EXPECT_FALSE(text_ctx);
    // An older server without build_info: recorded as empty.
    auto old = parse_llama_props(testing::json_answer(
        200, R"({"model_path":"/m.gguf","default_generation_settings":{"n_ctx":512}})"));
    ASSERT_TRUE(old);
    EXPECT_EQ(old->build_info, "");
    EXPECT_FALSE(old->total_slots);
}

TEST(LlamaSlots, SlotsAsTheServerListsThem) {
    auto slots = parse_llama_slots(
        testing::json_answer(200, testing::engine_fixture("llama-server-slots.json")));
    ASSERT_TRUE(slots) << slots.error().message();
    ASSERT_EQ(slots->size(), 2u);
    EXPECT_EQ((*slots)[0].id, 0);
    EXPECT_EQ((*slots)[0].n_ctx, 4096);
    EXPECT_FALSE((*slots)[0].is_processing);
    EXPECT_EQ((*slots)[1].id, 1);
    EXPECT_TRUE((*slots)[1].is_processing);
}

TEST(LlamaSlots, SlotListsThatAreNotTheServersAreRefused) {
    EXPECT_THAT(parse_llama_slots(testing::json_answer(200, "{}")).error().message(),
                HasSubstr("not a JSON array"));
    EXPECT_THAT(
        parse_llama_slots(testing::json_answer(200, R"([{"id":0},{"id":0}])")).error().message(),
        HasSubstr("listed twice"));
    EXPECT_THAT(parse_llama_slots(testing::json_answer(200, R"([{"id":-1}])")).error().message(),
                HasSubstr("no \"id\""));
    EXPECT_THAT(parse_llama_slots(testing::json_answer(200, R"([{"id":1.5}])")).error().message(),
                HasSubstr("no \"id\""));
    std::string many = "[";
    for (size_t i = 0; i <= kMaxLlamaSlots; ++i)
        many += (i ? ",{\"id\":" : "{\"id\":") + std::to_string(i % 7) + "}";
    EXPECT_THAT(parse_llama_slots(testing::json_answer(200, many + "]")).error().message(),
                HasSubstr("more than"));
    EXPECT_THAT(parse_llama_slots(testing::json_answer(200, "[{\"id\":0")).error().message(),
                HasSubstr("not JSON"));
    // Nesting is refused before nlohmann_json recurses into it.
    std::string deep = std::string(100000, '[') + std::string(100000, ']');
    EXPECT_THAT(parse_llama_slots(testing::json_answer(200, deep)).error().message(),
                HasSubstr("nests deeper than"));
}

TEST(LlamaSlots, SaveRestoreAndEraseAnswers) {
    auto saved = parse_llama_slot_result(
        testing::json_answer(200, testing::engine_fixture("llama-server-slot-save.json")),
        SlotAction::save);
    ASSERT_TRUE(saved) << saved.error().message();
    EXPECT_EQ(saved->id_slot, 0);
    EXPECT_EQ(saved->filename, "slot-0.bin");
    EXPECT_EQ(saved->tokens, 1745u);
    EXPECT_EQ(saved->bytes, 14309796u);

    auto restored = parse_llama_slot_result(
        testing::json_answer(200, testing::engine_fixture("llama-server-slot-restore.json")),
        SlotAction::restore);
    ASSERT_TRUE(restored) << restored.error().message();
    EXPECT_EQ(restored->tokens, 1745u);
    EXPECT_EQ(restored->bytes, 14309796u);

    auto erased = parse_llama_slot_result(
        testing::json_answer(200, testing::engine_fixture("llama-server-slot-erase.json")),
        SlotAction::erase);
    ASSERT_TRUE(erased) << erased.error().message();
    EXPECT_EQ(erased->tokens, 1745u);

    // A save's answer is not a restore's: n_restored is what a restore counts.
    auto crossed = parse_llama_slot_result(
        testing::json_answer(200, testing::engine_fixture("llama-server-slot-save.json")),
        SlotAction::restore);
    ASSERT_FALSE(crossed);
    EXPECT_THAT(crossed.error().message(), HasSubstr("\"n_restored\""));
}

TEST(LlamaSlots, ErrorAnswersSayWhatTheServerSaid) {
    struct Case {
        int status;
        const char* file;
        const char* text;
    } cases[] = {
        {501, "llama-server-error-multimodal.json",
         "HTTP 501 (not_supported_error): This feature is not supported by multimodal"},
        {501, "llama-server-error-no-slot-save-path.json",
         "HTTP 501 (not_supported_error): This server does not support slots action. Start it "
         "with `--slot-save-path`"},
        {400, "llama-server-error-invalid-slot.json",
         "HTTP 400 (invalid_request_error): Invalid slot ID"},
        {400, "llama-server-error-restore.json",
         "HTTP 400 (invalid_request_error): Unable to restore slot, no available space in KV "
         "cache or invalid slot save file"},
        {503, "llama-server-error-loading.json", "HTTP 503 (unavailable_error): Loading model"},
        {401, "llama-server-error-api-key.json",
         "HTTP 401 (authentication_error): Invalid API Key"},
    };
    for (const auto& c : cases) {
        HttpAnswer a = testing::json_answer(c.status, testing::engine_fixture(c.file));
        EXPECT_EQ(llama_error_text(a), c.text) << c.file;
        auto saved = parse_llama_slot_result(a, SlotAction::save);
        ASSERT_FALSE(saved) << c.file;
        EXPECT_EQ(saved.error().message(), std::string("POST /slots save: ") + c.text);
    }
    // The exception handler's plain text 500, and a control character in it.
    EXPECT_EQ(llama_error_text(testing::json_answer(500, "[json.exception.parse_error.101]\n")),
              "HTTP 500: [json.exception.parse_error.101]?");
    // No answer at all.
    HttpAnswer refused;
    refused.error = "connect: Connection refused";
    EXPECT_EQ(parse_llama_props(refused).error().message(),
              "GET /props: connect: Connection refused");
}

}  // namespace
}  // namespace infervisor
