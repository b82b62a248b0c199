// The config-check helper's reply (config/config_check_protocol.h): what
// the helper found comes back whole, and a reply a hostile helper made up
// is refused, not half-read.
#include "config/config_check_protocol.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace infervisor {
namespace {

using ::testing::ElementsAre;

TEST(ConfigCheckReply, ErrorsCountAndWarningsComeBackWhole) {
    ConfigErrors found;
    found.set_file("main.yaml");
    found.add_at("main.yaml", 3, 5, "bad");
    found.add_dropped(7);
    found.warn_at("main.yaml", 2, 5, "worker 'w': command[0] '/x' does not exist");
    auto back = decode_config_check_reply(encode_config_check_reply(found));
    ASSERT_TRUE(back);
    EXPECT_EQ(back->lines(), found.lines());
    EXPECT_EQ(back->count(), 8u);
    EXPECT_THAT(back->warning_lines(),
                ElementsAre("main.yaml:2:5: worker 'w': command[0] '/x' does not exist"));
}

TEST(ConfigCheckReply, AReplyNoHelperOfOursWritesIsRefused) {
    EXPECT_FALSE(decode_config_check_reply("not json"));
    EXPECT_FALSE(decode_config_check_reply(R"({"errors": []})"));
    EXPECT_FALSE(decode_config_check_reply(R"({"errors": {}, "dropped": 0})"));
    EXPECT_FALSE(decode_config_check_reply(R"({"errors": [], "dropped": -1})"));
    EXPECT_FALSE(decode_config_check_reply(R"({"errors": [], "dropped": 0, "warnings": 5})"));
    EXPECT_FALSE(decode_config_check_reply(
        R"({"errors": [], "dropped": 0, "warnings": [{"file": 1, "line": 1, "column": 1, "message": "m"}]})"));
    std::string many = R"({"dropped": 0, "errors": [], "warnings": [)";
    for (int i = 0; i < 101; ++i)
        many +=
            std::string(i ? "," : "") + R"({"file": "f", "line": 1, "column": 1, "message": "m"})";
    EXPECT_FALSE(decode_config_check_reply(many + "]}")) << "more than a helper keeps";
    // An older helper's reply, without warnings, is still read.
    auto old = decode_config_check_reply(R"({"errors": [], "dropped": 0})");
    ASSERT_TRUE(old);
    EXPECT_TRUE(old->warnings().empty());
}

}  // namespace
}  // namespace infervisor
