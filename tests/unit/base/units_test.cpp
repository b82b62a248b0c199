#include "base/units.h"

#include <gtest/gtest.h>

namespace infervisor {
namespace {

TEST(ParseSize, AcceptsUnitsAndMax) {
    EXPECT_EQ(*parse_size("0"), 0u);
    EXPECT_EQ(*parse_size("4096"), 4096u);
    EXPECT_EQ(*parse_size("512M"), 512ull << 20);
    EXPECT_EQ(*parse_size("2G"), 2ull << 30);
    EXPECT_EQ(*parse_size("2GiB"), 2ull << 30);
    EXPECT_EQ(*parse_size("1k"), 1024u);
    EXPECT_EQ(*parse_size("1T"), 1ull << 40);
    EXPECT_FALSE(parse_size("max")->has_value());
}

TEST(ParseSize, RejectsJunkWithAHelpfulMessage) {
    for (const char* bad : {"", "-1", "12X", "M", "1.5G", " 1G", "99999999999999999999"}) {
        auto r = parse_size(bad);
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_NE(r.error().what.find("invalid size"), std::string::npos) << r.error().what;
    }
    EXPECT_NE(parse_size("12X").error().what.find("unknown unit 'X'"), std::string::npos);
    EXPECT_NE(parse_size("99999999999T").error().what.find("too large"), std::string::npos);
}

TEST(FormatSize, RoundTrips) {
    EXPECT_EQ(format_size(ByteLimit{}), "max");
    EXPECT_EQ(format_size(512ull << 20), "512M");
    EXPECT_EQ(format_size(3ull << 30), "3G");
    EXPECT_EQ(format_size(1000), "1000");
    EXPECT_EQ(format_size(0), "0");
}

TEST(ParseDuration, AcceptsGroups) {
    EXPECT_EQ(parse_duration("30s")->count(), 30'000);
    EXPECT_EQ(parse_duration("250ms")->count(), 250);
    EXPECT_EQ(parse_duration("1m30s")->count(), 90'000);
    EXPECT_EQ(parse_duration("2h")->count(), 7'200'000);
    EXPECT_EQ(parse_duration("1d")->count(), 86'400'000);
    EXPECT_EQ(parse_duration("0s")->count(), 0);
}

TEST(ParseDuration, RejectsBareNumbersAndUnknownUnits) {
    EXPECT_NE(parse_duration("30").error().what.find("missing unit"), std::string::npos);
    EXPECT_NE(parse_duration("3w").error().what.find("unknown unit 'w'"), std::string::npos);
    EXPECT_FALSE(parse_duration("").ok());
    EXPECT_FALSE(parse_duration("s").ok());
    EXPECT_FALSE(parse_duration("-1s").ok());
}

TEST(FormatDuration, Renders) {
    EXPECT_EQ(format_duration(Duration(0)), "0s");
    EXPECT_EQ(format_duration(Duration(90'000)), "1m30s");
    EXPECT_EQ(format_duration(Duration(1'500)), "1s500ms");
}

}  // namespace
}  // namespace infervisor

namespace infervisor {
namespace {

TEST(ParseDuration, RejectsWhatWouldOverflowTheClock) {
    // 200000d fits in milliseconds but not in steady_clock's nanoseconds.
    EXPECT_NE(parse_duration("200000d").error().what.find("too large"), std::string::npos);
    EXPECT_NE(parse_duration("36500d1ms").error().what.find("too large"), std::string::npos);
    EXPECT_NE(
        parse_duration("4611686018427387903ms4611686018427387903ms").error().what.find("too large"),
        std::string::npos);
    EXPECT_TRUE(parse_duration("36500d").ok());
}

}  // namespace
}  // namespace infervisor
