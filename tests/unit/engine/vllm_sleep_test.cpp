// vLLM's sleep endpoints (engine/vllm_sleep.h): the requests as
// vllm/entrypoints/serve/dev/sleep/api_router.py routes them, its answers
// (an empty 200, {"is_sleeping": BOOL}, FastAPI's 404 without dev mode),
// and answers that are not what vLLM sends.
#include "engine/vllm_sleep.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "engine_answers.h"

namespace infervisor {
namespace {

using ::testing::HasSubstr;

EngineSpec vllm_engine() {
    EngineSpec e;
    e.kind = EngineKind::vllm;
    e.host = "::1";
    e.port = 8000;
    e.tls = true;
    return e;
}

TEST(VllmSleepRequests, AreThePathsAndMethodsVllmRoutes) {
    auto sleep = vllm_sleep_request(vllm_engine(), "k", 2);
    EXPECT_EQ(sleep.method, "POST");
    EXPECT_EQ(sleep.target, "/sleep?level=2");
    EXPECT_EQ(sleep.host, "::1");
    EXPECT_EQ(sleep.port, 8000);
    EXPECT_TRUE(sleep.tls);
    EXPECT_EQ(sleep.max_body, kMaxVllmAnswer);
    ASSERT_EQ(sleep.headers.size(), 1u);
    EXPECT_EQ(sleep.headers[0].first, "Authorization");
    EXPECT_EQ(sleep.headers[0].second, "Bearer k");

    auto wake = vllm_wake_up_request(vllm_engine(), "");
    EXPECT_EQ(wake.method, "POST");
    EXPECT_EQ(wake.target, "/wake_up");  // no tags: everything
    EXPECT_TRUE(wake.headers.empty());

    auto check = vllm_is_sleeping_request(vllm_engine(), "");
    EXPECT_EQ(check.method, "GET");
    EXPECT_EQ(check.target, "/is_sleeping");
}

TEST(VllmSleepAnswers, IsSleepingIsReadAsVllmWritesIt) {
    auto yes = parse_vllm_is_sleeping(testing::json_answer(200, R"({"is_sleeping":true})"));
    ASSERT_TRUE(yes) << yes.error().message();
    EXPECT_TRUE(*yes);
    auto no = parse_vllm_is_sleeping(testing::json_answer(200, R"({"is_sleeping": false})"));
    ASSERT_TRUE(no) << no.error().message();
    EXPECT_FALSE(*no);
}

TEST(VllmSleepAnswers, AnswersThatAreNotVllmsAreErrors) {
    for (const char* body : {R"({"is_sleeping":"true"})", R"({"is_sleeping":1})", "[true]",
                             R"({"sleeping":true})", "true", "{"}) {
        auto r = parse_vllm_is_sleeping(testing::json_answer(200, body));
        EXPECT_FALSE(r) << body;
    }
    auto deep = parse_vllm_is_sleeping(testing::json_answer(200, std::string(100, '[')));
    EXPECT_FALSE(deep);
}

TEST(VllmSleepAnswers, ErrorAnswersSayWhatTheServerNeeds) {
    auto not_found = check_vllm_done(testing::json_answer(404, R"({"detail":"Not Found"})"),
                                     "POST /sleep?level=1");
    ASSERT_FALSE(not_found);
    EXPECT_THAT(not_found.error().message(), HasSubstr("POST /sleep?level=1: HTTP 404"));
    EXPECT_THAT(not_found.error().message(), HasSubstr("VLLM_SERVER_DEV_MODE=1"));
    EXPECT_THAT(not_found.error().message(), HasSubstr("--enable-sleep-mode"));

    auto key =
        check_vllm_done(testing::json_answer(401, R"({"error":"Unauthorized"})"), "POST /wake_up");
    ASSERT_FALSE(key);
    EXPECT_THAT(key.error().message(), HasSubstr("engine.api_key"));

    auto crash =
        check_vllm_done(testing::json_answer(500, "Internal Server Error\x01"), "POST /wake_up");
    ASSERT_FALSE(crash);
    EXPECT_THAT(crash.error().message(), HasSubstr("HTTP 500: Internal Server Error?"));

    HttpAnswer refused;
    refused.error = "connect: Connection refused";
    auto none = check_vllm_done(refused, "POST /sleep?level=1");
    ASSERT_FALSE(none);
    EXPECT_EQ(none.error().message(), "POST /sleep?level=1: connect: Connection refused");

    EXPECT_TRUE(check_vllm_done(testing::json_answer(200, ""), "POST /sleep?level=1"));
}

}  // namespace
}  // namespace infervisor
