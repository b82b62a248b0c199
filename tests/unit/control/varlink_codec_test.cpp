#include <gtest/gtest.h>

#include "control/varlink_errors.h"
#include "control/varlink_framer.h"
#include "control/varlink_message.h"

namespace infervisor {
namespace {

using namespace std::string_literals;
using nlohmann::json;

TEST(VarlinkFramer, SplitsOnNulAcrossFeeds) {
    VarlinkFramer framer(1024);
    ASSERT_TRUE(framer.feed("{\"a\":1}\0{\"b\""s));
    EXPECT_EQ(framer.next(), "{\"a\":1}");
    EXPECT_EQ(framer.next(), std::nullopt);
    EXPECT_TRUE(framer.has_partial());
    ASSERT_TRUE(framer.feed(":2}\0\0"s));
    EXPECT_EQ(framer.next(), "{\"b\":2}");
    EXPECT_EQ(framer.next(), "");  // an empty message is still a message
    EXPECT_EQ(framer.next(), std::nullopt);
    EXPECT_EQ(framer.buffered(), 0u);
}

TEST(VarlinkFramer, OverflowsPastTheLimitAndStaysOverflowed) {
    VarlinkFramer framer(8);
    EXPECT_TRUE(framer.feed("1234567"));
    EXPECT_TRUE(framer.feed("8"));
    EXPECT_FALSE(framer.feed("9"));
    EXPECT_TRUE(framer.overflowed());
    EXPECT_FALSE(framer.feed("\0"s));
    EXPECT_EQ(framer.next(), std::nullopt);
}

TEST(VarlinkFramer, CountsUnconsumedMessagesAgainstTheLimit) {
    VarlinkFramer framer(8);
    EXPECT_TRUE(framer.feed("abc\0"s));
    EXPECT_TRUE(framer.feed("def\0"s));
    EXPECT_FALSE(framer.feed("g"));  // two messages nobody took, plus more
}

TEST(VarlinkFramer, ReusesSpaceOfConsumedMessages) {
    VarlinkFramer framer(8);
    for (int i = 0; i < 100; ++i) {
        ASSERT_TRUE(framer.feed("abcdef\0"s));
        ASSERT_EQ(framer.next(), "abcdef");
    }
}

TEST(VarlinkMessage, ParsesACall) {
    auto parsed = parse_call(
        R"({"method":"io.infervisor.supervisor.Stop","parameters":{"names":["a"]},"more":false})");
    auto* call = std::get_if<VarlinkCall>(&parsed);
    ASSERT_NE(call, nullptr);
    EXPECT_EQ(call->method, "io.infervisor.supervisor.Stop");
    EXPECT_EQ(call->interface_name(), "io.infervisor.supervisor");
    EXPECT_EQ(call->member_name(), "Stop");
    EXPECT_EQ(call->parameters, json({{"names", {"a"}}}));
    EXPECT_FALSE(call->more);
    EXPECT_FALSE(call->oneway);
}

TEST(VarlinkMessage, MissingParametersAreAnEmptyObject) {
    auto parsed = parse_call(R"({"method":"org.varlink.service.GetInfo","oneway":true})");
    auto* call = std::get_if<VarlinkCall>(&parsed);
    ASSERT_NE(call, nullptr);
    EXPECT_TRUE(call->parameters.is_object());
    EXPECT_TRUE(call->oneway);
}

CallRejected rejection(std::string_view text) {
    auto parsed = parse_call(text);
    auto* rejected = std::get_if<CallRejected>(&parsed);
    return rejected ? *rejected : CallRejected{"(accepted)", {}, false};
}

TEST(VarlinkMessage, MalformedEnvelopesAreFatalProtocolErrors) {
    for (auto text :
         {"", "{", "not json", "[]", "42", "{\"method\":1}", "{}", "{\"method\":\"NoDot\"}",
          "{\"method\":\"a.\"}", "{\"method\":\"a.B\",\"more\":\"yes\"}",
          "{\"method\":\"a.B\"} trailing", "{\"method\":\"a.B\",\"oneway\":1}"}) {
        auto r = rejection(text);
        EXPECT_EQ(r.error, varlink_error::kProtocolError) << text;
        EXPECT_TRUE(r.fatal) << text;
    }
}

TEST(VarlinkMessage, WrongFieldsOfAWellFormedCallNameTheField) {
    auto r = rejection(R"({"method":"a.B","parameters":[1]})");
    EXPECT_EQ(r.error, varlink_error::kInvalidParameter);
    EXPECT_EQ(r.parameters["parameter"], "parameters");
    EXPECT_FALSE(r.fatal);
    EXPECT_EQ(rejection(R"({"method":"a.B","upgrade":true})").parameters["parameter"], "upgrade");
    EXPECT_EQ(rejection(R"({"method":"a.B","more":true,"oneway":true})").parameters["parameter"],
              "oneway");
}

TEST(VarlinkMessage, RefusesDeepNestingBeforeParsing) {
    std::string deep = R"({"method":"a.B","parameters":{"x":)" + std::string(100, '[') +
                       std::string(100, ']') + "}}";
    EXPECT_EQ(rejection(deep).error, varlink_error::kProtocolError);
    EXPECT_TRUE(json_nesting_exceeds(std::string(65, '{'), 64));
    EXPECT_FALSE(json_nesting_exceeds("{\"[[[[[[\":1}", 1));  // brackets in strings do not count
    EXPECT_FALSE(json_nesting_exceeds(R"({"\"[[[":1})", 1));
}

TEST(VarlinkMessage, RejectsInvalidUtf8InCalls) {
    EXPECT_EQ(rejection("{\"method\":\"a.B\",\"parameters\":{\"x\":\"\xff\"}}").error,
              varlink_error::kProtocolError);
}

TEST(VarlinkMessage, EncodesRepliesWithNulAndReplacesInvalidUtf8) {
    std::string reply = encode_reply({{"status", "bad \xff byte"}}, true);
    ASSERT_EQ(reply.back(), '\0');
    auto parsed = parse_reply(std::string_view(reply).substr(0, reply.size() - 1));
    ASSERT_TRUE(parsed.ok());
    EXPECT_TRUE(parsed->continues);
    EXPECT_EQ(parsed->parameters["status"], "bad \xEF\xBF\xBD byte");
}

TEST(VarlinkMessage, RoundTripsCallsAndErrors) {
    VarlinkCall call{"io.infervisor.supervisor.Subscribe", {{"history", 3}}, true, false};
    std::string bytes = encode_call(call);
    auto parsed = parse_call(std::string_view(bytes).substr(0, bytes.size() - 1));
    auto* back = std::get_if<VarlinkCall>(&parsed);
    ASSERT_NE(back, nullptr);
    EXPECT_EQ(back->method, call.method);
    EXPECT_EQ(back->parameters, call.parameters);
    EXPECT_TRUE(back->more);

    std::string error = encode_error(varlink_error::kWorkerNotFound, {{"name", "x"}});
    auto reply = parse_reply(std::string_view(error).substr(0, error.size() - 1));
    ASSERT_TRUE(reply.ok());
    EXPECT_EQ(reply->error, varlink_error::kWorkerNotFound);
    EXPECT_EQ(reply->parameters["name"], "x");
    EXPECT_FALSE(reply->continues);
}

TEST(VarlinkMessage, MalformedRepliesAreErrors) {
    EXPECT_FALSE(parse_reply("nope").ok());
    EXPECT_FALSE(parse_reply(R"({"error":5})").ok());
    EXPECT_FALSE(parse_reply(R"({"parameters":[]})").ok());
    EXPECT_FALSE(parse_reply(R"({"continues":"x"})").ok());
}

}  // namespace
}  // namespace infervisor
